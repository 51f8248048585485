"""Support code shared by the behaviour confirmers, one concept a module: what to call and how to call
it, positions in the source and on the stack, values, outcomes and their evidence, and the recorders a
run is observed with. Nothing is re-exported, so each confirmer's imports show what it relies on."""
