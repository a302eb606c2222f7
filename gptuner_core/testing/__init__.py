"""Contract test suites shipped with the package (like optuna's ``optuna.testing``).

* :mod:`gptuner_core.testing.store_contract`: ``StoreContract`` for study stores.
* :mod:`gptuner_core.testing.backend_contract`: ``BackendContract`` for backends.

They import pytest, so import them only from tests.
"""
