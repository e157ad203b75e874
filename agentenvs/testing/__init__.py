"""Test tooling for text envs (not used by the envs themselves).

- :mod:`agentenvs.testing.fuzzing`: hostile model outputs and the step invariants every env keeps
  (``fuzz_env``, ``check_step``): run it on your own ``TextEnv`` too;
- :mod:`agentenvs.testing.shop_routes`: hostile HTTP requests against the WebShop Flask app;
- :mod:`agentenvs.testing.machine`: the CPU model benchmarks print beside their times.

Both are used by ``tests/fuzz`` and ``benchmarks/fuzz_envs.py``.
"""
