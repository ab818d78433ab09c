"""The conformance scenario's custom check: passes, saying which trial it judged."""
import json
import sys

context = json.load(sys.stdin)
print(json.dumps({"passed": True, "reason": json.dumps(context["trial"], sort_keys=True)}))
