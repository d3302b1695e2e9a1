"""The interference-aware kube-scheduler extender: policy.py, facts.py, decisions.py, cluster_view.py, service.py, server.py."""
