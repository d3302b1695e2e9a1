"""The interference-aware kube-scheduler extender.

policy.py (what it decides by), facts.py (what it reads from pods and nodes),
decisions.py (filter and prioritize), cluster_view.py (list + watch),
service.py and server.py (HTTP), __main__.py (command line).
"""
