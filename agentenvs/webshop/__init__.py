"""WebShop-v0: the shopping environment (pure Python: in-process BM25, no Java, no spaCy model).

Modules: ``data`` (official files, cleaning, goals, splits), ``generator`` (the embedded
procedural shop), ``search`` (BM25), ``nouns`` and ``reward`` (the original's reward),
``pages`` (text and HTML pages), ``engine`` (shop and sessions), ``env`` (the Gymnasium
env), ``expert`` (the scripted shopper behind ``expert_action``), ``app`` (the Flask shop: ``python -m agentenvs.webshop serve``).
"""
