"""The TextWorld PDDL engine that plays ALFWorld games, loaded once and reused.

The official ``AlfredTWEnv`` rebuilds its engine on every reset: a new ``PddlEnv``
that loads a new copy of the planner library, parses the grammar, and translates the
PDDL problem to SAS four times. :class:`AlfredEngine` keeps one ``PddlEnv`` (with
ALFWorld's ``AlfredDemangler`` and ``AlfredInfos`` wrappers, stacked as the official env
stacks them) for its whole life and memoizes the deterministic, pure parts of the work:

* the parsed grammar rules (all ALFWorld games share them except the one holding the
  task sentence), keyed by rule text;
* the parsed text templates and logic queries that TextWorld re-parses for every
  admissible command of every step;
* the SAS translation of each PDDL problem (bounded LRU), so replaying a game — a GRPO
  group, a second epoch — costs no translation at all; the next game can be translated
  ahead of time in a helper process (:meth:`AlfredEngine.prepare`);
* the planner's optimized translation, made only when a plan is asked for.

The game dynamics, text and admissible commands are TextWorld's own, unchanged (the
tests compare them with the official env step by step).
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import threading
from collections import Counter, OrderedDict, defaultdict
from concurrent.futures import Future
from functools import lru_cache
from pathlib import Path
from typing import Any

import fast_downward
import textworld
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
from textworld.core import GameState
from textworld.envs.pddl import PddlEnv, textgen
from textworld.envs.pddl import logic as pddl_logic
from textworld.envs.wrappers import Filter
from textworld.utils import check_flag

from agentenvs.alfworld.translation import Translation, translate_pddl
from agentenvs.alfworld.translator import shared_translator


@lru_cache(maxsize=4096)
def _parse_rule(rhs: str) -> list[Any]:
    # Parsed rule bodies are shared between games; TextWorld deep-copies a body before
    # it expands it, so sharing never leaks state between games.
    return textgen._parse_and_convert(rhs, rule_name="symbols")


def _parse_grammar(grammar_json: str) -> textgen.ContextSensitiveGrammar:
    grammar = textgen.ContextSensitiveGrammar()
    for name, rules in json.loads(grammar_json).items():
        for rule in rules:
            grammar.add_rule(
                textgen.ProductionRule(
                    lhs=name,
                    rhs=_parse_rule(rule["rhs"]),
                    weight=rule.get("weight", 1),
                    condition=rule.get("condition", ""),
                )
            )
    return grammar


@lru_cache(maxsize=8192)
def _parse_symbols(text: str) -> list[Any]:
    return textgen._parse_and_convert(text, rule_name="symbols")


@lru_cache(maxsize=4096)
def _parse_query(expression: str) -> Any:
    return textworld.logic.Rule.parse_conjunctive_query(expression)


class _FastGrammar(textgen.ContextSensitiveGrammar):
    """TextWorld's context-sensitive grammar, expanding text the same way but parsing
    each template and query once (TextWorld re-parses them for every command of every
    step, which is most of a step's time)."""

    def derive(self, start: str, context: dict[str, Any] | None = None) -> str:
        stack = copy.deepcopy(_parse_symbols(start))[::-1]
        for symbol in stack:
            symbol.context = textgen.copy_context(context or {})
        derived = []
        while stack:
            symbol = stack.pop()
            if isinstance(symbol, textgen.TerminalSymbol):
                derived.append(symbol)
            elif isinstance(symbol, textgen.NonterminalSymbol):
                stack += self.replace(symbol)[::-1]
            elif isinstance(symbol, textgen.ConditionalSymbol):
                stack += self._expand_conditional(symbol)[::-1]
            elif isinstance(symbol, textgen.ListSymbol):
                stack += self._expand_list(symbol)[::-1]
            elif isinstance(symbol, textgen.EvalSymbol):
                stack += symbol.derive()[::-1]
            else:
                raise NotImplementedError(f"unknown symbol: {type(symbol)}")
        return "".join(map(str, derived))

    def replace(self, start: Any) -> list[Any]:
        rules = self._rules.get(str(start))
        if not rules:
            raise textgen.CSGUnknownSymbolError(start)
        state, mapping = start.context.get("state"), start.context.get("mapping")
        for rule in rules:
            if not rule.condition or any(True for _ in state.all_assignments(_parse_query(rule.condition), mapping)):
                symbols = copy.deepcopy(rule.rhs)
                for symbol in symbols:
                    symbol.context = textgen.copy_context(start.context)
                return symbols
        raise IndexError(f"no applicable rule for #{start}#")

    def _expand_conditional(self, symbol: Any) -> list[Any]:
        if len(symbol.context) == 0:
            raise ValueError("Empty context")
        context = textgen.copy_context(symbol.context)
        contexts = [context]
        if symbol.given:
            contexts = []
            for mapping in context["state"].all_assignments(_parse_query(symbol.given), context["mapping"]):
                bound = textgen.copy_context(context)
                bound["variables"].update({ph.name: bound["entity_infos"][var.name] for ph, var in mapping.items()})
                bound["mapping"].update(mapping)
                contexts.append(bound)
        return [symbol.expression.copy(c) for c in contexts]

    def _expand_list(self, symbol: Any) -> list[Any]:
        inner = symbol.symbol
        inner.context = symbol.context
        items = self._expand_conditional(inner) if isinstance(inner, textgen.ConditionalSymbol) else inner.derive()
        return textgen.display_list(items, symbol.context)


class _MemoizedConverter(pddl_logic._ModelConverter):
    """TextWorld's converter of a parsed ``.twl2`` document, with memoized grammar rules."""

    def walk_PddlDocumentNode(self, node: Any) -> tuple[dict[str, Any], textgen.ContextSensitiveGrammar]:
        actions: dict[str, Any] = {}
        grammar: dict[str, Any] = {}
        for part in node.parts:
            if isinstance(part, textworld.envs.pddl.logic.model.ActionTypeNode):
                action = self.walk(part)
                actions[action.name.lower()] = action
                lines = (line for line in action.grammar.split("\n") if not line.lstrip().startswith("#"))
                grammar.update(json.loads("\n".join(lines)))
            elif isinstance(part, textworld.envs.pddl.logic.model.ActionGrammarNode):
                grammar.update(json.loads(self._unescape_block(part.code)))
        return actions, _parse_grammar(json.dumps(grammar))


class _GameLogic(pddl_logic.GameLogic):
    """``GameLogic`` built through :class:`_MemoizedConverter` (same result, less parsing)."""

    def __init__(self, domain: str, grammar: str) -> None:
        self.domain = domain
        self.grammar = _FastGrammar()
        self.actions = {}
        self.types = textworld.logic.TypeHierarchy()
        actions, rules = _MemoizedConverter().walk(pddl_logic._PARSER.parse(grammar, rule_name="pddlStart"))
        self.actions.update(actions)
        self.grammar.update(rules)


_TRANSLATOR_LOCK = threading.Lock()


class _TranslationCache:
    """A bounded LRU of :class:`Translation` keyed by (domain, problem, optimize).

    A prefetched translation (made in another process) waits in its own slot, so
    prefetching works even at capacity 0. The lock guards the translator, which keeps
    its options in module globals.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[str, str, bool], Translation] = OrderedDict()
        self.pending: Future[tuple[tuple[str, str, bool], Translation]] | None = None

    def get(self, domain: str, problem: str, *, optimize: bool = False) -> Translation:
        with _TRANSLATOR_LOCK:
            return self._get(domain, problem, optimize)

    def _get(self, domain: str, problem: str, optimize: bool) -> Translation:
        key = (domain, problem, optimize)
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit
        translation = self._take_pending(key)
        if translation is None:
            translation = Translation(*translate_pddl(domain, problem, optimize=optimize))
        if self.capacity > 0:
            self._items[key] = translation
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return translation

    def _take_pending(self, key: tuple[str, str, bool]) -> Translation | None:
        if self.pending is None or key[2]:
            return None
        try:
            pending_key, translation = self.pending.result()
        except Exception:  # a broken prefetch only costs the translation it meant to save
            pending_key, translation = None, None
        self.pending = None
        return translation if pending_key == key else None


class _PddlState(pddl_logic.PddlState):
    """TextWorld's ``PddlState`` built from a cached translation; plans on demand."""

    def __init__(self, downward_lib: Any, pddl_problem: str, logic: Any, translations: _TranslationCache) -> None:
        translation = translations.get(logic.domain, pddl_problem)
        self._translations = translations
        self._replan_loaded = False
        self._facts: defaultdict[str, set[Any]] = defaultdict(set)
        self._vars_by_name: dict[str, Any] = {}
        self._vars_by_type: defaultdict[str, set[Any]] = defaultdict(set)
        self._var_counts: Counter[str] = Counter()
        self._logic = logic
        self.downward_lib = downward_lib
        self.pddl_problem = pddl_problem
        self.task, self.sas = translation.task, translation.sas
        self._actions = {a.name: a for a in self.task.actions}
        for type_ in self.task.types:
            try:
                self._logic.types.add(textworld.logic.Type(type_.name, type_.supertype_names))
            except ValueError:
                pass  # already known
        self.downward_lib.load_sas(self.sas.encode("utf-8"))
        self.name2type = {o.name: o.type_name for o in self.task.objects}
        self.add_facts(self._initial_facts())

    def _initial_facts(self) -> list[Any]:
        facts = []
        for atom in self.task.init:
            if isinstance(atom, fast_downward.translate.pddl.conditions.Atom):
                if atom.predicate != "=":
                    facts.append(self._proposition(atom.predicate, atom.args))
            elif isinstance(atom, fast_downward.translate.pddl.f_expression.Assign):
                name = f"{atom.expression.value}"
                if atom.fluent.symbol != "total-cost" and not name.isdigit():  # drop distances
                    facts.append(self._proposition(name, atom.fluent.args))
        size = self.downward_lib.get_state_size()
        atoms = (pddl_logic.Atom * size)()
        self.downward_lib.get_state(atoms)
        facts += [fact for fact in (atom.get_fact(self.name2type) for atom in atoms) if not fact.is_negation]
        return facts

    def _proposition(self, name: str, args: Any) -> Any:
        return textworld.logic.Proposition(name, [textworld.logic.Variable(a, self.name2type[a]) for a in args])

    def plan_operators(self) -> list[str]:
        """The planner's grounded PDDL operators from the current state ([] if none).

        TextWorld's ``replan`` without its last step (naming the operators' objects), so
        that a plan found on one problem can be written with another game's names.
        """
        if not self._replan_loaded:
            optimized = self._translations.get(self._logic.domain, self.pddl_problem, optimize=True)
            self.downward_lib.load_sas_replan(optimized.sas.encode("utf-8"))
            self._replan_loaded = True
        if not self.downward_lib.replan(check_flag("TW_PDDL_DEBUG")):
            return []
        operators = (fast_downward.Operator * self.downward_lib.get_last_plan_length())()
        self.downward_lib.get_last_plan(operators)
        return [operator.name for operator in operators]

    def replan(self, infos: Any) -> list[str]:
        return self.plan_to_templated_actions(self.plan_operators(), infos)


class _CachedPddlEnv(PddlEnv):
    """TextWorld's ``PddlEnv`` whose load and reset reuse parsed logic and translations."""

    def __init__(self, infos: textworld.EnvInfos, translations: _TranslationCache) -> None:
        super().__init__(infos)
        self._translations = translations
        self._logic_key: tuple[str, str] | None = None

    def load(self, filename: str) -> None:
        with open(filename) as f:
            data = json.load(f)
        self._game_file = filename
        self._game_data = data
        self.walkthrough = data.get("walkthrough")
        key = (data["pddl_domain"], data["grammar"])
        if key != self._logic_key:
            self._logic = _GameLogic(domain=data["pddl_domain"], grammar=data["grammar"])
            self._logic_key = key
        self._pddl_state = self._new_state()
        self._entity_infos = self._get_entity_infos()
        self._fresh = True

    def _new_state(self) -> _PddlState:
        return _PddlState(self.downward_lib, self._game_data["pddl_problem"], self._logic, self._translations)

    def reset(self) -> GameState:
        # A state just built by load() is the initial state: reuse it rather than rebuild.
        if not self._fresh:
            self._pddl_state = self._new_state()
        self._fresh = False
        self.prev_state = None
        self.state = GameState()
        self._last_action = None
        self._moves = 0
        context = {
            "state": self._pddl_state,
            "facts": list(self._pddl_state.facts),
            "variables": {},
            "mapping": {},
            "entity_infos": self._entity_infos,
        }
        self.state.feedback = self._logic.grammar.derive("#intro#", context)
        self.state.raw = self.state.feedback
        self._gather_infos()
        if "walkthrough" in self.request_infos.extras:
            self.state["extra.walkthrough"] = self.walkthrough or self._pddl_state.replan(self._entity_infos)
        return self.state

    def step(self, command: str) -> tuple[GameState, float, bool]:
        self._fresh = False
        return super().step(command)


class AlfredEngine:
    """One ALFWorld game engine, reused for every game it loads.

    Args:
        translation_cache_size: Games whose SAS translation is kept (0 disables).

    >>> engine = AlfredEngine()  # doctest: +SKIP
    >>> observation, infos = engine.start("path/to/game.tw-pddl")  # doctest: +SKIP
    >>> observation, score, done, infos = engine.step("look")  # doctest: +SKIP
    """

    def __init__(self, translation_cache_size: int = 32) -> None:
        self.request_infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        self._translations = _TranslationCache(translation_cache_size)
        self._pddl = _CachedPddlEnv(self.request_infos, self._translations)
        self._env = Filter(AlfredInfos(AlfredDemangler(self._pddl, shuffle=False)))
        self._prefetch_off = False  # set when a prefetch could not be queued
        self._pending_file: str | None = None
        self.game_file: str | None = None

    def start(self, game_file: str | Path) -> tuple[str, dict[str, Any]]:
        """Loads (unless already loaded) and resets ``game_file``; returns TextWorld's (obs, infos)."""
        game_file = str(game_file)
        if self._pending_file is not None and self._pending_file != game_file:
            self._translations.pending = None  # prefetched the wrong game: don't wait for it
        self._pending_file = None
        if game_file != self.game_file:
            self._env.load(game_file)
            self.game_file = game_file
        return self._env.reset()

    def step(self, command: str) -> tuple[str, float, bool, dict[str, Any]]:
        """Executes ``command``; returns TextWorld's (obs, score, done, infos)."""
        return self._env.step(command)

    @property
    def walkthrough(self) -> list[str] | None:
        """The walkthrough stored in the loaded game file, if any."""
        return self._pddl.walkthrough

    def plan(self) -> list[str]:
        """The planner's commands from the current state to the goal ([] if none).

        The planner is a blind (uniform-cost) search with no time or memory bound: on a
        large game it may run for minutes and take gigabytes. The generator therefore
        plans on a reduced problem, in a bounded child process
        (:mod:`agentenvs.alfworld.verifier`).
        """
        return self._pddl._pddl_state.replan(self._pddl._entity_infos)

    def state_facts(self) -> list[tuple[str, tuple[str, ...]]]:
        """The true facts of the current state, sorted: ``(predicate, arguments)``, lower-cased."""
        facts = self._pddl._pddl_state.facts
        return sorted({(f.name, tuple(v.name for v in f.arguments)) for f in facts if not f.is_negation})

    def plan_operators(self) -> list[str]:
        """The planner's grounded PDDL operators (``"pickupobject agent1 loc_... mug_... "``)."""
        return self._pddl._pddl_state.plan_operators()

    def commands(self, operators: list[str]) -> list[str]:
        """``operators`` (of any problem over this game's objects) as this game's commands."""
        return self._pddl._pddl_state.plan_to_templated_actions(list(operators), self._pddl._entity_infos)

    @staticmethod
    def can_prefetch() -> bool:
        """Whether this process prefetches: not in a daemonic process (gymnasium's
        ``AsyncVectorEnv`` workers), where every env already has a process of its own and a
        helper each would double their number."""
        return not multiprocessing.current_process().daemon

    def prepare(self, game_file: str | Path) -> None:
        """Queues ``game_file``'s translation in this process's helper (:mod:`agentenvs.alfworld.translator`).

        A process, not a thread: the translator holds the GIL and swaps ``sys.stdout``
        and ``sys.argv`` while it runs, which a thread would inflict on the caller. Any
        failure only turns prefetching off, or costs the translation it meant to save.
        """
        if self._prefetch_off or not self.can_prefetch():
            return
        try:
            self._translations.pending = shared_translator().submit(str(game_file))
            self._pending_file = str(game_file)
        except Exception:  # the helper's thread is shut down (interpreter exit)
            self._translations.pending = None
            self._prefetch_off = True

    def close(self) -> None:
        """Drops this engine's pending prefetch (the process's helper serves the others)."""
        if self._translations.pending is not None:
            self._translations.pending.cancel()
        self._translations.pending = None
