"""Chip normalization on device_kind strings as real chips report them, and the peak table."""

import pytest

from bench import hardware


@pytest.mark.parametrize(
    "kind,chip",
    [
        ("TPU v6 lite", "v6e"),
        ("TPU v6e", "v6e"),
        ("TPU v5 lite", "v5e"),
        ("TPU v5e", "v5e"),
        ("TPU v5p", "v5p"),
        ("TPU v5", "v5p"),
        ("TPU v4", "v4"),
        ("TPU7x", "7x"),
        ("TPU 7x", "7x"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H100 PCIe", "h100_pcie"),
        ("NVIDIA H200", "h200"),
        ("cpu", "cpu"),
        ("Some New Chip 9", "some_new_chip_9"),
    ],
)
def test_normalize_recorded_device_kinds(kind, chip):
    assert hardware.normalize_chip(kind) == chip


def test_every_named_chip_has_a_sourced_peak():
    for chip in ("v4", "v5e", "v5p", "v6e", "7x", "h100", "h200", "cpu"):
        spec = hardware.chip_spec(chip)
        assert spec is not None and spec.peak_bf16_tflops > 0 and spec.hbm_gb_s > 0 and spec.source
    assert hardware.chip_spec("v6e").peak_bf16_tflops == 918.0
    assert hardware.chip_spec("v5e").peak_bf16_tflops == 197.0
    assert hardware.chip_spec("cpu").nominal and not hardware.chip_spec("v6e").nominal


def test_default_size_follows_the_backend():
    assert hardware.default_size("tpu") == "full"
    assert hardware.default_size("gpu") == "full"
    assert hardware.default_size("cpu") == "small"


def test_detect_on_this_machine():
    info = hardware.detect()
    assert info["chip"] == hardware.normalize_chip(info["device_kind"])
    assert info["jax_version"] and info["jaxlib_version"]


@pytest.mark.parametrize(
    ("accelerator_type", "chip"),
    [("v5litepod-4", "v5e"), ("v6e-8", "v6e"), ("v5p-8", "v5p"), ("v4-8", "v4"), ("tpu7x-8", "7x"), ("v9z-1", None)],
)
def test_the_tpu_chip_is_read_without_jax_from_the_accelerator_type(accelerator_type, chip, tmp_path):
    from bench.hardware import tpu_chip

    assert tpu_chip({"TPU_ACCELERATOR_TYPE": accelerator_type}, pci_root=tmp_path / "none") == chip


def test_the_tpu_chip_is_read_from_the_pci_id_where_no_variable_names_it(tmp_path):
    """A lent v5e: four PCI functions of vendor 0x1ae0, device 0x0063 (recorded 2026-12-05); a gVNIC (0x0042) of the
    same vendor before them decides nothing."""
    from bench.hardware import mosaic_device_kind, tpu_chip

    for i, (vendor, device) in enumerate([("0x8086", "0x1237"), ("0x1ae0", "0x0042"), ("0x1ae0", "0x0063")]):
        (tmp_path / f"0000:00:0{i}.0").mkdir()
        (tmp_path / f"0000:00:0{i}.0" / "vendor").write_text(vendor + "\n")
        (tmp_path / f"0000:00:0{i}.0" / "device").write_text(device + "\n")
    assert tpu_chip({}, pci_root=tmp_path) == "v5e"
    assert tpu_chip({}, pci_root=tmp_path / "absent") is None
    assert hardware.normalize_chip(mosaic_device_kind("v5e")) == "v5e" and mosaic_device_kind("7x") == "TPU7x"


def test_the_host_cpu_names_the_model_and_x86_generation(tmp_path) -> None:
    """A CPU row's chip is only `cpu`: the runner records the host's CPU (schema 5), with x86's family and model where
    a VM names only the vendor's line."""
    from bench.hardware import host_cpu

    x86 = tmp_path / "x86"
    x86.write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
        "model name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: other\n"
    )
    assert host_cpu(x86) == "AMD EPYC (family 25, model 17)"
    vm = tmp_path / "vm"  # a TPU v5e VM's cpuinfo
    vm.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 175\nmodel\t\t: 1\nmodel name\t: unknown\n")
    assert host_cpu(vm) == "AuthenticAMD (family 175, model 1)"
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nBogoMIPS\t: 50.00\nModel\t\t: Raspberry  Pi 4\n")
    assert host_cpu(arm) == "Raspberry Pi 4"
    assert host_cpu(tmp_path / "missing")  # no /proc/cpuinfo: the platform's own name, never empty on this host
