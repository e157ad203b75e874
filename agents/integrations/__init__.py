"""Our credit rules inside other libraries' trainers (each an optional extra, imported only here).

:mod:`agents.integrations.trl`: ``CreditGRPOTrainer``, TRL's ``GRPOTrainer`` with any registered
credit rule (``credit="taspo"``, ...). ``import agents`` imports none of these.
"""
