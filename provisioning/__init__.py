"""Provisioning: turn a planner plan into EC2 resources (boto3), and remove every one of them."""
