"""The error catalogue: ordered rules (rules.py) and sanitised real strings (fixtures/)."""

from recovery.catalogue.model import Facts, Rule, Tier
from recovery.catalogue.rules import RULES, RULES_BY_ID

__all__ = ["RULES", "RULES_BY_ID", "Facts", "Rule", "Tier"]
