"""vdnn.plan returns the figures `vdnn plan --json` prints (planning/plan_report.h builds both)."""
import json

import pytest

import vdnn


@pytest.mark.parametrize("policy", ["", "all", "auto"])
def test_plan_equals_cli_json(cli, policy):
    # A device profile: its roofline costs are the same in both processes (cpu costs are measured).
    args = ["plan", "--model", "fmnist_cnn", "--batch", 64, "--device", "titan-x-maxwell",
            "--device-memory", "48MiB", "--json"] + (["--policy", policy] if policy else [])
    expected = json.loads(cli(*args))
    got = vdnn.plan("fmnist_cnn", batch=64, device="titan-x-maxwell", device_memory="48MiB", policy=policy)
    assert got == expected
    assert got["configurations"], "the plan has rows"


def test_plan_of_a_loaded_model_with_another_input(cli):
    model = vdnn.load_model("fmnist_cnn", input=(1, 32, 32))
    expected = json.loads(cli("plan", "--model", "fmnist_cnn", "--input", "1x32x32", "--batch", 16,
                              "--device", "v100-16gb", "--json"))
    assert vdnn.plan(model, batch=16, device="v100-16gb") == expected


def test_a_host_budget_rules_out_the_rows_that_offload_more_as_the_cli_does(cli):
    args = ["plan", "--model", "fmnist_cnn", "--batch", 64, "--device", "titan-x-maxwell",
            "--device-memory", "48MiB", "--host-memory", "1MiB", "--json"]
    expected = json.loads(cli(*args))
    got = vdnn.plan("fmnist_cnn", batch=64, device="titan-x-maxwell", device_memory="48MiB", host_memory="1MiB")
    assert got == expected
    rows = {r["configuration"]: r for r in got["configurations"]}
    over = [r for r in rows.values() if r["host_bytes"] > 1 << 20]
    assert over, "the test needs a row whose host copies exceed 1 MiB"
    for r in over:
        assert not r["fits"] and not r["host_fits"], r["configuration"]
    for r in rows.values():
        if r["host_bytes"] <= 1 << 20:
            assert r["host_fits"], r["configuration"]


def test_slice_search_false_skips_the_search_as_no_slice_search_does(cli):
    args = ["plan", "--model", "fmnist_cnn", "--batch", 64, "--device", "titan-x-maxwell",
            "--device-memory", "48MiB", "--policy", "auto", "--json"]
    searched = vdnn.plan("fmnist_cnn", batch=64, device="titan-x-maxwell", device_memory="48MiB", policy="auto")
    assert "slice_runs" in searched
    skipped = vdnn.plan("fmnist_cnn", batch=64, device="titan-x-maxwell", device_memory="48MiB", policy="auto",
                        slice_search=False)
    assert "slice_runs" not in skipped
    assert skipped == json.loads(cli(*args, "--no-slice-search"))


def test_a_gpu_profile_plans_bf16_as_the_cli_does_and_one_without_bf16_refuses(cli):
    args = ["plan", "--model", "gpt_char", "--batch", 8, "--device", "a100-40gb", "--optimizer", "adamw",
            "--precision", "bf16", "--json"]
    expected = json.loads(cli(*args))
    got = vdnn.plan("gpt_char", batch=8, device="a100-40gb", optimizer="adamw", precision="bf16")
    assert got == expected
    fp32 = vdnn.plan("gpt_char", batch=8, device="a100-40gb", optimizer="adamw")
    assert got["configurations"][0]["peak_by_class"]["feature_maps"] < fp32["configurations"][0]["peak_by_class"][
        "feature_maps"]
    with pytest.raises(vdnn.Error, match="device profile 'v100-16gb' has no bf16 arithmetic"):
        vdnn.plan("gpt_char", batch=8, device="v100-16gb", precision="bf16")
    with pytest.raises(vdnn.Error, match="precision"):
        vdnn.plan("gpt_char", batch=8, device="a100-40gb", precision="fp16")


def test_plan_devices_equals_the_cli_table_and_refuses_cpu(cli):
    args = ["plan", "--model", "gpt_char", "--batch", 8, "--device", "v100-16gb,a100-40gb", "--optimizer", "adamw",
            "--json"]
    expected = json.loads(cli(*args))
    got = vdnn.plan_devices("gpt_char", ["v100-16gb", "a100-40gb"], batch=8, optimizer="adamw")
    assert got == expected
    assert [d["device"] for d in got["devices"]] == ["v100-16gb", "a100-40gb"]
    assert [p["policy"] for p in got["devices"][0]["policies"]] == ["none", "conv", "all", "dyn", "auto"]
    one = vdnn.plan_devices("gpt_char", ["h100"], batch=8, policy="auto", precision="bf16")
    assert [p["policy"] for p in one["devices"][0]["policies"]] == ["auto"]
    with pytest.raises(vdnn.Error, match="devices cpu,h100: a training plan over several devices takes device "
                                         "profiles"):
        vdnn.plan_devices("gpt_char", ["cpu", "h100"], batch=8)
