from tests.jobs.test_falhas import execucoes

# The teste_execucoes table, for the cluster tests here too.
__all__ = ["execucoes"]
