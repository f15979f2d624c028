"""The fast path's nodes: analyze -> choose -> write -> check -> (judge -> write)* -> annotate.

Each node reads the graph state and returns its updates; everything a node learned from an LLM
(the reply, the diagnosis) goes into the state, so a graph resumed from its checkpoint never
pays for a call twice. State values are plain data (str, int, dict, list) so the checkpoint
stays readable by any later version.
"""

from __future__ import annotations

import operator
from dataclasses import asdict
from typing import Annotated, Optional, TypedDict

from design_space.candidate import new_candidate_id
from design_space.dimensions import Backend
from design_space.errors import ConfigError, LLMError, PromptTooLong
from design_space.evaluation import Evaluation, Status, trim_log
from design_space.hardware import HardwareProfile
from design_space.patterns import Pattern
from design_space.point import DesignPoint
from design_space.space import valid_points
from design_space.spec import KernelSpec
from agents.fast_path import analysis, prompts
from agents.fast_path.blocks import Blocks, unmark, validation_problem, with_blocks, wrap_kernel_bodies
from agents.fast_path.result import FastPathStep, FastPathTools
from agents.llm.base import LLMClient, LLMReply, LLMRequest
from agents.template_proposer import conservative_point

JUDGE_CHARS = 2_000  # of a diagnosis carried into the next prompt


class FastState(TypedDict, total=False):
    model: str  # label of the client that started the graph (the candidate's origin)
    analysis: str
    point: str  # the chosen (conservative) point's key
    iteration: int  # writes made so far
    reply: str  # the last writer reply, as received
    code: Optional[str]  # the code it held (None: garbled)
    declared: Optional[str]  # the point key it declared (or the chosen one when it declared none)
    write_problem: str  # why the last reply cannot be checked ('' when it can)
    checked: Optional[str]  # the code as checked (with evolve blocks)
    blocks_note: str
    blocks_inserted: bool
    evaluation: Optional[dict]  # the last check's Evaluation, as JSON
    feedback: str  # what the next write sees about the failed attempt
    llm_error: str
    status: str  # "ok" | "gave_up" once finished
    reason: str
    final_source: str
    final_point: str
    candidate_id: str
    trajectory: Annotated[list, operator.add]  # FastPathStep dicts, appended by every node


def _step(node: str, iteration: int, summary: str, status: Optional[str] = None, reason: str = "") -> list[dict]:
    return [asdict(FastPathStep(node, iteration, summary, status, reason))]


class Nodes:
    """The node functions, bound to one run's inputs."""

    def __init__(self, *, spec: KernelSpec, pattern: Pattern, hardware: HardwareProfile, client: LLMClient,
                 tools: FastPathTools, backend: Optional[Backend], max_iterations: int,
                 seed_source: Optional[str]) -> None:
        self.spec, self.pattern, self.hardware, self.client = spec, pattern, hardware, client
        self.tools, self.backend, self.max_iterations, self.seed_source = tools, backend, max_iterations, seed_source

    # ------------------------------------------------------------------ nodes

    def analyze(self, s: FastState) -> dict:
        text = analysis.analyse(self.spec, self.pattern, self.seed_source)
        what = "the seed program" if self.seed_source is not None else f"the reference {self.spec.reference}"
        return {"analysis": text, "trajectory": _step("analyze", 0, f"analysed {what}:\n{text}")}

    def choose(self, s: FastState) -> dict:
        points = valid_points(self.pattern, self.hardware, self.spec.restrictions)
        if self.backend is not None:
            points = [p for p in points if p.backend is Backend(self.backend)]
        point = conservative_point(points)
        if point is None:
            raise ConfigError(f"no valid design point of {self.pattern.name} on {self.hardware.name}"
                              + (f" with backend {Backend(self.backend).value}" if self.backend is not None else ""),
                              "choose another backend, or relax the spec's restrictions (`cuco space` lists the points)")
        how = "given" if self.backend is not None else "conservative choice"
        return {"point": point.key(), "trajectory": _step(
            "choose", 0, f"backend {point.backend.value} ({how}); conservative point {point.key()}")}

    def write(self, s: FastState) -> dict:
        i = s.get("iteration", 0) + 1
        point = DesignPoint.parse_key(s["point"])
        example = self.pattern.render(point)
        system, user = prompts.write_prompt(analysis=s["analysis"], point=point, example=example,
                                            feedback=s.get("feedback", ""))
        try:
            try:
                reply = self._call("write", i, system, user, temperature=0.2, max_tokens=16384)
            except PromptTooLong as e:  # once: the example (the largest part) shortened to what the window takes
                over = len(system) + len(user) - (e.fits_chars or 0)
                if e.fits_chars is None or over >= len(example) // 2:
                    raise
                system, user = prompts.write_prompt(analysis=s["analysis"], point=point,
                                                    example=trim_log(example, len(example) - over),
                                                    feedback=trim_log(s.get("feedback", ""), 2000))
                reply = self._call("write", i, system, user, temperature=0.2, max_tokens=16384)
        except LLMError as e:
            return {"iteration": i, "llm_error": str(e), "trajectory": _step("write", i, "the LLM call failed", None, str(e))}
        parsed = prompts.parse_reply(reply.text)
        declared, problem = (point, parsed.problem) if parsed.code is None else \
            prompts.declared_point(parsed.point_key, point)
        out = {"iteration": i, "reply": reply.text, "code": parsed.code, "write_problem": problem, "llm_error": "",
               "declared": declared.key() if declared else None}
        if problem:
            out["feedback"] = prompts.feedback_text(iteration=i, reason=problem, diagnosis="", code=parsed.code)
            summary = f"{_usage(reply)}; unusable: {problem}"
        else:
            how = "declared" if parsed.point_key else "none declared: the asked point stands"
            summary = f"{_usage(reply)}; {len(parsed.code)} characters of code; point {declared.key()} ({how})"
        out["trajectory"] = _step("write", i, summary, None, problem)
        return out

    def check(self, s: FastState) -> dict:
        i = s["iteration"]
        blocks = with_blocks(s["code"])
        ev = self.tools.evaluate(blocks.source, DesignPoint.parse_key(s["declared"]))
        ok = ev.status is Status.OK
        summary = f"{blocks.note}; {ev.status.value} at stage {ev.stage.value}"
        return {"checked": blocks.source, "blocks_note": blocks.note, "blocks_inserted": blocks.inserted,
                "evaluation": ev.model_dump(mode="json"),
                "trajectory": _step("check", i, summary, ev.status.value, "" if ok else ev.reason)}

    def judge(self, s: FastState) -> dict:
        i = s["iteration"]
        ev = Evaluation.model_validate(s["evaluation"])
        system, user = prompts.judge_prompt(iteration=i, point_key=s["declared"], status=ev.status.value,
                                            stage=ev.stage.value, reason=ev.reason, logs=ev.logs, code=s["checked"])
        try:
            reply = self._call("judge", i, system, user, temperature=0.0, max_tokens=2048)
        except LLMError as e:
            return {"llm_error": str(e), "trajectory": _step("judge", i, "the LLM call failed", None, str(e))}
        diagnosis = reply.text.strip()[:JUDGE_CHARS] or "(the judge gave no diagnosis)"
        feedback = prompts.feedback_text(iteration=i, reason=ev.reason, diagnosis=diagnosis, code=s["code"])
        return {"feedback": feedback, "trajectory": _step("judge", i, f"{_usage(reply)}; diagnosis: {diagnosis}",
                                                          None, ev.reason)}

    def annotate(self, s: FastState) -> dict:
        i = s["iteration"]
        blocks = Blocks(s["checked"], s["blocks_note"], s["blocks_inserted"])
        final, note = blocks.source, f"{blocks.note}; validated: removing the marker lines gives back the checked code"
        problem = validation_problem(blocks, s["code"])
        if problem:
            annotated, wrapped = wrap_kernel_bodies(unmark(blocks.source))
            again = validation_problem(Blocks(annotated, "", inserted=True), s["code"])
            if again is None:
                final = annotated
                note = (f"{blocks.note}; failed validation ({problem}): fell back to blocks around the body of each "
                        f"kernel ({', '.join(wrapped)}), validated")
            else:
                note = f"{blocks.note}; failed validation ({problem}); the kernel-body fallback failed too ({again})"
        return {"status": "ok", "reason": "", "final_source": final, "final_point": s["declared"],
                "candidate_id": s.get("candidate_id") or new_candidate_id(),
                "trajectory": _step("annotate", i, note)}

    def give_up(self, s: FastState) -> dict:
        i = s.get("iteration", 0)
        reason = s.get("llm_error") or s.get("write_problem") or \
            (Evaluation.model_validate(s["evaluation"]).reason if s.get("evaluation") else "no attempt succeeded")
        why = "an LLM call failed for good" if s.get("llm_error") else f"no correct kernel in {i} iteration(s)"
        return {"status": "gave_up", "reason": reason, "trajectory": _step("give_up", i, why, None, reason)}

    # ------------------------------------------------------------------ routing

    def after_write(self, s: FastState) -> str:
        if s.get("llm_error"):
            return "give_up"
        if s.get("write_problem"):
            return "write" if s["iteration"] < self.max_iterations else "give_up"
        return "check"

    def after_check(self, s: FastState) -> str:
        if s["evaluation"]["status"] == Status.OK.value:
            return "annotate"
        return "judge" if s["iteration"] < self.max_iterations else "give_up"

    def after_judge(self, s: FastState) -> str:
        return "give_up" if s.get("llm_error") else "write"

    # ------------------------------------------------------------------ LLM

    def _call(self, node: str, iteration: int, system: str, user: str, *, temperature: float,
              max_tokens: int) -> LLMReply:
        """One recorded call; BudgetExhausted propagates (clean stop, the checkpoint resumes)."""
        request = LLMRequest(system=system, messages=(("user", user),), purpose=f"fast_path.{node}",
                             max_tokens=max_tokens, temperature=temperature,
                             agent_step=f"fast_path:{node}#{iteration}")
        return self.client.complete(request)


def _usage(reply: LLMReply) -> str:
    c = reply.call
    return (f"{c.model}: {c.prompt_chars} prompt characters, {c.tokens_in} tokens in / {c.tokens_out} out, "
            f"${c.cost_usd:.4f}, {c.latency_s:.1f} s" + (f", {c.retries} retries" if c.retries else ""))
