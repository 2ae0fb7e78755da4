"""CDK app of the MangaAssist quality gate: one evaluation stack composed of one construct per concern.

Importing this package (or ``infra.config`` / ``infra.asl``) does not import aws_cdk, so the local
engine can share the ASL placeholder mapping without paying for jsii.
"""
