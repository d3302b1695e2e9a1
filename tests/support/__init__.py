"""Helpers shared by the test tiers: a kwok cluster, Kubernetes objects, ansible-playbook runs."""
