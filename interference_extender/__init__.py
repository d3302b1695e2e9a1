"""The interference-aware kube-scheduler extender service (decisions in plugins/module_utils/scheduler_extender.py)."""
