"""Shared mathematics of every solver: losses, penalties, validation and monitoring.

Nothing in this sub-package imports an estimator; estimators reach these building blocks
through here so that each formula exists exactly once.
"""
