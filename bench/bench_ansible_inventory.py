"""Figure: hosts and fields (address, user, port, groups) where the built-in Ansible reader differs
from `ansible-inventory --list`, over the inventories under tests/data/ansible. Target: 0.
Beside it, the same count over seeded random inventories (bench/ansible_random.py: INI and YAML,
groups of groups, vars at every level, group_vars and host_vars files, ranges, ports).

Run: .venv/bin/python bench/bench_ansible_inventory.py [INVENTORY ...]   (needs .tools/ansible:
`bash .ci/tools`). Inventories given on the command line (files, folders or scripts: say, a
checkout's inventories) are compared too, and counted apart.

Each inventory is read twice through the app's own path (ansible_specs.machine_of after either
reader): once by Ansible's ansible-inventory, once by the built-in reader. A host counts as a
difference when one reader has it and the other does not, and each of its four fields counts
when they disagree. Hosts both readers leave out (Jinja only Ansible renders, winrm...) are
counted apart, as are the hosts read.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ansible_random import RANDOM_INVENTORIES, write_random_inventory

from cmdop_tui.machines.ansible import AnsibleMachines, read_ansible_inventory
from cmdop_tui.machines.spec import MachineSpec

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "ansible"
ANSIBLE_INVENTORY = ROOT / ".tools" / "ansible" / "bin" / "ansible-inventory"
FIELDS = ("host", "user", "port", "tags")  # address, user, port, groups


def inventories() -> list[str]:
    lines = (DATA / "inventories.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def field_values(spec: MachineSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in FIELDS}


def differences(by_ansible: AnsibleMachines, built_in: AnsibleMachines) -> list[str]:
    """Each host missing from one side, and each field that differs, as a line."""
    theirs = {spec.name: field_values(spec) for spec in by_ansible.machines}
    ours = {spec.name: field_values(spec) for spec in built_in.machines}
    found = [f"  {name}: only ansible-inventory has it" for name in theirs.keys() - ours.keys()]
    found += [f"  {name}: only the built-in reader has it" for name in ours.keys() - theirs.keys()]
    for name in sorted(theirs.keys() & ours.keys()):
        for field, value in theirs[name].items():
            if ours[name][field] != value:
                found.append(f"  {name}.{field}: ansible-inventory {value!r}, built-in {ours[name][field]!r}")
    return found


def compare(path: Path, label: str, report: list[str]) -> tuple[int, int, int]:
    """(hosts read, hosts left out, differences) for one inventory; the differences in `report`."""
    by_ansible = read_ansible_inventory(path, ANSIBLE_INVENTORY)
    built_in = read_ansible_inventory(path, None)
    found = differences(by_ansible, built_in)
    if by_ansible.reader != "ansible-inventory":
        found.append(f"  ansible-inventory failed: {by_ansible.problems}")
    left_out = {host.name for host in by_ansible.left_out} ^ {host.name for host in built_in.left_out}
    found += [f"  {name}: left out by one reader only" for name in sorted(left_out)]
    report += [f"{label}:", *found] if found else []
    return len(by_ansible.machines), len(by_ansible.left_out), len(found)


def main() -> int:
    if not ANSIBLE_INVENTORY.exists():
        print(f"no {ANSIBLE_INVENTORY}: run `bash .ci/tools` first", file=sys.stderr)
        return 2
    report: list[str] = []
    totals = [0, 0, 0]
    print(f"{'inventory':28} {'hosts':>5} {'left out':>8} {'differ':>6}")
    for entry in inventories():
        counts = compare(DATA / entry, entry, report)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        print(f"{entry:28} {counts[0]:>5} {counts[1]:>8} {counts[2]:>6}")
    random_totals = [0, 0, 0]
    with tempfile.TemporaryDirectory() as scratch:
        for seed in range(RANDOM_INVENTORIES):
            path = write_random_inventory(Path(scratch) / f"random-{seed}", seed)
            counts = compare(path, f"random inventory {seed}", report)
            random_totals = [a + b for a, b in zip(random_totals, counts, strict=True)]
    given_totals = [0, 0, 0]
    for given in sys.argv[1:]:
        counts = compare(Path(given), given, report)
        given_totals = [a + b for a, b in zip(given_totals, counts, strict=True)]
    print("\n".join(report))
    print(
        f"\ntests/data/ansible: {totals[0]} hosts read, {totals[1]} left out by both (Jinja, winrm, unsafe ssh args...)"
    )
    print(f"hosts and fields differing from ansible-inventory --list: {totals[2]} (target 0)")
    print(f"{RANDOM_INVENTORIES} random inventories: {random_totals[0]} hosts read, differing: {random_totals[2]}")
    if sys.argv[1:]:
        print(f"{len(sys.argv) - 1} given inventories: {given_totals[0]} hosts read, differing: {given_totals[2]}")
    return 0 if totals[2] == random_totals[2] == given_totals[2] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
