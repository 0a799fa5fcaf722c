"""One record per preset (mai.presets): every entry point runs the settings of its preset's record (issue 39).

cpu-real's settings were measured (frozen on the dev split), so no entry point may differ from its record there;
the cpu presets' scripts may size their random-weight runs otherwise, naming the field where they do."""
import pytest

from mai import cli
from mai.presets import CASCADE, RECORDS, SPARSE, STAGE, Record

# The experiments that run a cascade or its models under the cascade settings, with the record fields each takes.
SCRIPTS = {"07_prompt_modes": CASCADE + STAGE, "08_reasoning_transfer": ("small", "large") + CASCADE + SPARSE + STAGE,
           "09_layer_ablation": ("small", "large") + CASCADE + STAGE,
           "10_mai": ("small", "large") + CASCADE + ("transfer",) + SPARSE + STAGE,
           "12_speculative_decoding": CASCADE}


def effective(experiment, name: str, argv: list[str]):
    """The namespace the script's main() runs under: its own parser, its preset filled in by cli.parse."""
    module = experiment(name)
    seen = {}

    def caught(p, presets, argv=None, **kw):
        seen["args"] = cli_parse(p, presets, argv, **kw)
        raise SystemExit(0)

    cli_parse, cli.parse = cli.parse, caught
    try:
        with pytest.raises(SystemExit):
            module.main(argv)
    finally:
        cli.parse = cli_parse
    return seen["args"], module


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_every_cpu_real_experiment_runs_the_records_settings(experiment, name):
    record = RECORDS["cpu-real"]
    args, module = effective(experiment, name, ["--preset", "cpu-real"])
    assert tuple(module.PRESETS["cpu-real"].models) == record.models and module.PRESETS["cpu-real"].real
    expected = record.settings(*SCRIPTS[name])
    assert {field: getattr(args, field) for field in expected} == expected
    assert set(args.benchmarks) <= set(record.benchmarks)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_flag_wins_over_the_record(experiment, name):
    args, _ = effective(experiment, name, ["--preset", "cpu-real", "--think-tokens", "99"])
    assert args.think_tokens == 99 != RECORDS["cpu-real"].think_tokens


def test_the_server_and_mai_answer_serve_each_records_settings():
    from mai import __main__ as entry
    from mai.serving import server

    for preset, record in RECORDS.items():
        args = server.parse(["--preset", preset, "--benchmark", record.benchmarks[0] if record.benchmarks else "chartqa"])
        served = record.served()
        assert {field: getattr(args, field) for field in served} == served, preset
        assert entry.presets()[preset] == served
    assert RECORDS["cpu-real"].served()["transfer"] == "sparse"  # Table 10's MAI, not the flag's default (full)
    assert "decode" not in RECORDS["cpu-real"].served()  # served queries decode eagerly, turn by turn


def test_a_cpu_script_names_what_it_sizes_otherwise(experiment):
    """Table 7's cpu run reasons longer than the record (48 tokens against 32); everything else is the record's."""
    args, _ = effective(experiment, "07_prompt_modes", ["--preset", "cpu"])
    record = RECORDS["cpu"]
    assert (args.think_tokens, args.simple_tokens) == (48, 16) != (record.think_tokens, record.simple_tokens)
    assert args.max_pixels == record.max_pixels


def test_a_record_puts_only_what_it_sets():
    record = Record(("a", "b"), ("x",), small="a", large="b", think_tokens=8)
    preset = record.preset(3, sparse=True, stage=True, mode="think")
    assert preset.extra == dict(small="a", large="b", think_tokens=8, mode="think") and preset.limit == 3
    assert record.preset(3, pair=False, think_tokens=4).extra == dict(think_tokens=4)
