"""One trial, start to end (trial.py): its sandbox, services, agent, recorder, audit
(audit.py), forbidden-behaviour rules (forbidden.py) and checks; the pieces of its phases
(phases.py); what every trial of a run shares (context.py: RunContext)."""
