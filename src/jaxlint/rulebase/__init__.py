"""What a rule is written against: the Rule base class, its fixes, and the walk state it reads."""
