"""Take a tuned setting to a server: one JSON with what VIA-SD found and the nearest settings of three engines.

Sections: `via_sd` (the tuned setting, its routes, the models, both halves' figures, the date and project version),
`transformers` (`generate()` keyword arguments, the assistant model outside them), `vllm` (`speculative_config`) and
`sglang` (`--speculative-*` flags). Every engine section names the version its field names were checked against and
says, per setting, whether the mapping is exact, approximate or unsupported and what is lost (docs/tuning.md keeps
the table of checked names).

What no engine has: tier 1 (a draft token kept on the drafter's confidence alone, no verifier) and tier 2 (the slim,
layer-skipped verifier). The engines run classic speculative decoding, which is lossless: their output is the
verifier's own, so what they reach here is the grid's classic-SD row at the same draft length and draft cut
(`engines_reach_here`), not VIA-SD's speed-up.
"""

from __future__ import annotations

import datetime as dt
import math
import subprocess
from pathlib import Path

from core.analysis.tuning import SPEED, TuneResult
from core.config import DecodeConfig
from core.models.layer_routes import resolve_route
from core.models.loading import ModelBundle

ROOT = Path(__file__).resolve().parents[2]
EXACT, APPROXIMATE, UNSUPPORTED = "exact", "approximate", "unsupported"
VLLM_CHECKED = {"version": "0.26.0 (docs.vllm.ai API page vllm.config.speculative) and the main branch source",
                "source": "vllm/config/speculative.py (SpeculativeConfig); vllm/v1/spec_decode/metrics.py",
                "checked": "2026-12-07"}
SGLANG_CHECKED = {"version": "main branch (python/sglang/srt/server_args.py); docs.sglang.io speculative decoding page",
                  "source": "--speculative-algorithm choices EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM",
                  "checked": "2026-12-07"}
TIER1_LOST = ("tier 1 keeps a draft token whose drafter confidence is >= tau_accept with no verifier at all (lossy); "
              "no engine has it. A draft-stop confidence threshold is a different rule: it ends the draft at the first "
              "low-confidence token and still verifies every token drafted, so it is lossless and saves drafting, "
              "never verification")
TIER2_LOST = ("tier 2, the slim verifier (the verifier with layers skipped deciding tokens it is confident about), has "
              "no equivalent in transformers, vLLM or SGLang: every engine verifies with the full model")


def project_version() -> str:
    """The newest CHANGELOG date, and the git commit when this is a git checkout."""
    version = "unknown"
    changelog = ROOT / "CHANGELOG.md"
    if changelog.exists():
        heads = [line[3:].strip() for line in changelog.read_text().splitlines() if line.startswith("## ")]
        version = heads[0] if heads else version
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{version} ({commit})" if commit else version


def _mapping(setting: str, status: str, ours: object, theirs: object, lost: str = "") -> dict:
    return {"setting": setting, "ours": ours, "theirs": theirs, "status": status, "lost": lost}


def _common(rec: dict) -> list[dict]:
    return [_mapping("tau_accept (tier 1)", UNSUPPORTED, rec["tau_accept"], None,
                     TIER1_LOST if rec["tau_accept"] < 1.0 else "nothing: tier 1 is off in this setting"),
            _mapping("tau_slim (tier 2, slim verifier)", UNSUPPORTED, rec["tau_slim"], None,
                     TIER2_LOST if rec["tau_slim"] < 1.0 else "nothing: tier 2 is off in this setting")]


def transformers_section(rec: dict, verifier: str, drafter: str | None, layers: int) -> dict:
    """`generate()` arguments checked against the installed transformers' GenerationConfig."""
    import transformers

    kwargs: dict = {"do_sample": False}
    mappings = [_mapping("temperature 0 (greedy)", EXACT, 0.0, {"do_sample": False})]
    assistant = None
    gamma, stop = int(rec["gamma"]), float(rec["draft_stop_below"])
    if rec["drafter"] == "ngram":
        kwargs["prompt_lookup_num_tokens"] = gamma
        mappings.append(_mapping("drafter ngram, gamma", APPROXIMATE, gamma, {"prompt_lookup_num_tokens": gamma},
                                 "transformers matches n-grams of up to max_matching_ngram_size (default 2) and "
                                 "copies the first match; ours matches up to ngram_size tokens, the latest match, and "
                                 "never copies the chat template"))
    else:
        kwargs.update(num_assistant_tokens=gamma, num_assistant_tokens_schedule="constant",
                      assistant_confidence_threshold=stop)
        mappings.append(_mapping("gamma", EXACT, gamma, {"num_assistant_tokens": gamma,
                                                         "num_assistant_tokens_schedule": "constant"},
                                 "transformers reads these from the assistant's generation_config: apply "
                                 "`assistant_generation_config` to assistant_model.generation_config too"))
        mappings.append(_mapping("draft_stop_below", APPROXIMATE, stop, {"assistant_confidence_threshold": stop},
                                 "both end a draft at its first token whose top probability is below the value "
                                 "(0 turns it off in both); transformers moves its threshold during generation "
                                 "(a ROC fit) when scikit-learn is installed, ours stays fixed"))
        if rec["drafter"] == "model":
            assistant = drafter
            mappings.append(_mapping("drafter model", EXACT, drafter, {"assistant_model": drafter}))
        else:
            kept = layers - len(rec.get("draft_route_skipped", ()))
            kwargs["assistant_early_exit"] = max(1, kept)
            mappings.append(_mapping("drafter self (layer-skipping draft route)", APPROXIMATE,
                                     rec["draft_route"], {"assistant_early_exit": max(1, kept)},
                                     "transformers drafts with the first N layers and the output head (for models "
                                     "trained for early exit); our draft route skips layers inside the stack"))
    assistant_config = {k: v for k, v in kwargs.items() if k.startswith(("num_assistant", "assistant_confidence"))}
    return {"version": transformers.__version__,
            "checked": "installed source: generation/configuration_utils.py (GenerationConfig) and "
                       "generation/candidate_generator.py (which reads the assistant's own generation_config)",
            "generate_kwargs": kwargs, "assistant_model": assistant, "assistant_generation_config": assistant_config,
            "verifier": verifier, "apply_chat_template": True,
            "mappings": mappings + _common(rec)}


def vllm_section(rec: dict, drafter: str | None) -> dict:
    gamma = int(rec["gamma"])
    if rec["drafter"] == "model":
        config = {"method": "draft_model", "model": drafter, "num_speculative_tokens": gamma}
        mappings = [_mapping("drafter model, gamma", EXACT, [drafter, gamma], config)]
    elif rec["drafter"] == "ngram":
        config = {"method": "ngram", "num_speculative_tokens": gamma,
                  "prompt_lookup_max": int(rec.get("ngram_size", 3)), "prompt_lookup_min": 1}
        mappings = [_mapping("drafter ngram, gamma", APPROXIMATE, gamma, config,
                             "vLLM's n-gram proposer searches the whole context (prompt and output); ours skips the "
                             "chat template and scores each copy")]
    else:
        config = None
        mappings = [_mapping("drafter self (layer-skipping draft route)", UNSUPPORTED, rec["draft_route"], None,
                             "vLLM has no layer-skipping self-draft method; a small draft model "
                             "(method draft_model) or EAGLE heads are its nearest")]
    mappings.append(_mapping("draft_stop_below", UNSUPPORTED, rec["draft_stop_below"], None,
                             "SpeculativeConfig has no draft-confidence stop: every draft is num_speculative_tokens "
                             "long" if rec["draft_stop_below"] > 0 else "nothing: the draft cut is off"))
    return {**VLLM_CHECKED, "speculative_config": config, "mappings": mappings + _common(rec)}


def sglang_section(rec: dict, drafter: str | None) -> dict:
    gamma = int(rec["gamma"])
    if rec["drafter"] == "model":
        flags = {"--speculative-algorithm": "STANDALONE", "--speculative-draft-model-path": drafter,
                 "--speculative-num-steps": gamma, "--speculative-eagle-topk": 1,
                 "--speculative-num-draft-tokens": gamma + 1}
        mappings = [_mapping("drafter model, gamma", APPROXIMATE, [drafter, gamma], flags,
                             "a chain (top-k 1) of gamma steps; SGLang counts the root token in num-draft-tokens")]
    elif rec["drafter"] == "ngram":
        flags = {"--speculative-algorithm": "NGRAM", "--speculative-num-draft-tokens": gamma}
        mappings = [_mapping("drafter ngram, gamma", APPROXIMATE, gamma, flags,
                             "SGLang's NGRAM drafts a tree from a cache of earlier text (CUDA only); ours copies one "
                             "continuation from this request")]
    else:
        flags = {}
        mappings = [_mapping("drafter self (layer-skipping draft route)", UNSUPPORTED, rec["draft_route"], None,
                             "SGLang has no layer-skipping self-draft; STANDALONE with a small model or EAGLE are "
                             "its nearest")]
    mappings.append(_mapping("draft_stop_below", UNSUPPORTED, rec["draft_stop_below"], None,
                             "no draft-confidence stop among the --speculative-* flags checked"
                             if rec["draft_stop_below"] > 0 else "nothing: the draft cut is off"))
    mappings.append(_mapping("--speculative-accept-threshold-single", UNSUPPORTED, None, None,
                             "not tier 1: SGLang's threshold accepts a draft token on the *verifier's* probability "
                             "(the verifier still runs); tier 1 trusts the drafter's"))
    return {**SGLANG_CHECKED, "flags": flags, "mappings": mappings + _common(rec)}


def _figures(row: dict) -> dict:
    keep = (SPEED, "words_differing", "agreement", "identical_share", "expectations_met", "tokens", "prompts",
            "measured_speedup_median", "serving")
    out = {k: row[k] for k in keep if k in row}
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def build_export(result: TuneResult, bundle: ModelBundle, base: DecodeConfig, tuning_prompts: int) -> dict:
    """The four sections for the recommendation of `result` (its `held_apart` filled by the caller)."""
    rec = dict(result.recommended)
    config = bundle.verifier.model.config
    layers = int(config.get_text_config().num_hidden_layers)
    slim = resolve_route(rec["slim_route"], config)
    draft = resolve_route(rec["draft_route"], config)
    rec.update(draft_route_skipped=list(draft.skipped), ngram_size=base.ngram_size)
    drafter = bundle.drafter.name if bundle.drafter is not None else None
    grid = result.grid
    classic = grid[(grid.tau_accept >= 1.0) & (grid.tau_slim >= 1.0) & (grid.gamma == rec["gamma"])
                   & (grid.draft_stop_below == rec["draft_stop_below"])]
    via_sd = {
        "setting": {k: rec[k] for k in ("tau_accept", "tau_slim", "gamma", "draft_signal", "slim_signal", "drafter",
                                        "draft_route", "slim_route", "draft_stop_below")},
        "slim_route": {"name": slim.name, "skipped_layers": list(slim.skipped), "of_layers": layers},
        "draft_route": ({"name": draft.name, "skipped_layers": list(draft.skipped)} if rec["drafter"] == "self"
                        else None),
        "models": {"verifier": bundle.verifier.name, "drafter": drafter, "dtype": str(bundle.verifier.dtype),
                   "device": str(bundle.verifier.device),
                   "note": "an 'embedded:' name is this project's converted copy: give an engine the same model's "
                           "Hub id or folder"},
        "target": result.target.describe(), "max_new_tokens": base.max_new_tokens, "chat_template": base.chat_template,
        "tuning_half": {"prompts": tuning_prompts, **_figures(rec)},
        "held_apart_half": _figures(result.held_apart),
        "speedup_note": f"{SPEED}: the accelerator cost model's (core/decoding/cost.py); measured_speedup_median: "
                        "wall clock on this machine (None unless --measure)",
        "engines_reach_here": _figures(classic.iloc[0].to_dict()) if len(classic) else None,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "project_version": project_version(),
    }
    return {"via_sd": via_sd, "transformers": transformers_section(rec, bundle.verifier.name, drafter, layers),
            "vllm": vllm_section(rec, drafter), "sglang": sglang_section(rec, drafter)}
