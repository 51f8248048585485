"""scripts/ecosystem.py, imported for the tests (scripts/ is not a package)."""
import importlib.util
import sys

from conftest import ROOT

_spec = importlib.util.spec_from_file_location("ecosystem", ROOT / "scripts" / "ecosystem.py")
ecosystem = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("ecosystem", ecosystem)
_spec.loader.exec_module(ecosystem)
