"""The weekly rollout review report and the Grafana dashboards."""
