#!/usr/bin/env bash
# The aarch64 check (issue 16): build an arm64 Debian userland with debootstrap, run it under
# qemu-user-static, install nncompress there from this tree (pip: no constriction wheel exists
# for Linux ARM, so the numba twin codes), and compare with this x86-64 machine: archive and
# model-probability hashes at levels 1, 6 and 9 on two inputs, each machine decoding the other's
# archives, then the golden tests on arm64.  Prints a summary for bench/PORTABILITY.md.
#
#   sudo bench/aarch64.sh            # root: debootstrap, binfmt_misc, chroot
#
# Environment: NNC_ARM_WORK (work folder, default /var/tmp/nnc-aarch64; the userland is kept
# and reused), NNC_ARM_SUITE (bookworm), NNC_ARM_MIRROR, NNC_HOST_PYTHON (an x86-64 Python with
# nncompress's dependencies; default .venv/bin/python of this tree), NNC_CORPORA (text input:
# the first 16 KiB of enwik8_1M there, else README.md).  Needs network access (Debian mirror,
# PyPI; a host CA bundle, NNC_ARM_CA_BUNDLE, default /etc/ssl/certs/ca-certificates.crt, is
# copied in for pip, so that a TLS-inspecting proxy the host trusts works).  Takes ~20-40
# minutes, most of it numba compiling under emulation.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${NNC_ARM_WORK:-/var/tmp/nnc-aarch64}
root=$work/rootfs
suite=${NNC_ARM_SUITE:-bookworm}
mirror=${NNC_ARM_MIRROR:-http://deb.debian.org/debian}
host_python=${NNC_HOST_PYTHON:-$repo/.venv/bin/python}
text=$repo/README.md
if [ -n "${NNC_CORPORA:-}" ] && [ -f "$NNC_CORPORA/enwik8_1M" ]; then text=$NNC_CORPORA/enwik8_1M; fi
ca_bundle=${NNC_ARM_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
log=$work/log.txt
started=$(date +%s)

[ "$(id -u)" = 0 ] || { echo "run as root (debootstrap, binfmt_misc, chroot)" >&2; exit 2; }
mkdir -p "$work"
: > "$log"
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$log"; }
# a clean environment: the host's PIP_*/PYTHON* settings name host paths
in_arm() {
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 PIP_CERT=/opt/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"
}

step "tools"
if ! command -v debootstrap >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
    apt-get update -qq && apt-get install -y -qq debootstrap qemu-user-static >>"$log" 2>&1
fi
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    # flag F: the kernel opens the interpreter now, so the chroot needs no copy of it
    printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:F' \
        > /proc/sys/fs/binfmt_misc/register
fi

step "arm64 userland ($suite)"
if [ ! -x "$root/usr/bin/python3" ]; then
    rm -rf "$root"
    debootstrap --foreign --arch=arm64 --variant=minbase \
        --include=python3,python3-venv,python3-pip,ca-certificates "$suite" "$root" "$mirror" >>"$log" 2>&1
    chroot "$root" /debootstrap/debootstrap --second-stage >>"$log" 2>&1
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
if [ -f "$ca_bundle" ]; then cp "$ca_bundle" "$root/opt/host-ca.crt"
else cp "$root/etc/ssl/certs/ca-certificates.crt" "$root/opt/host-ca.crt"; fi
for fs in proc sys dev; do
    mountpoint -q "$root/$fs" || mount --bind "/$fs" "$root/$fs"
done
trap 'for fs in proc sys dev; do umount -l "$root/$fs" 2>/dev/null || true; done' EXIT
[ "$(in_arm uname -m)" = aarch64 ] || { echo "the chroot does not run as aarch64" >&2; exit 1; }

step "copy this tree and install it on arm64 (pip, PyPI wheels)"
rm -rf "$root/opt/nncompress" "$root/opt/results"
mkdir -p "$root/opt/nncompress" "$root/opt/results"
tar -C "$repo" --exclude=.git --exclude=.venv --exclude=__pycache__ --exclude='*.egg-info' \
    --exclude=build -cf - . | tar -C "$root/opt/nncompress" -xf -
cp "$text" "$root/opt/results/text"
[ -x "$root/opt/venv/bin/python" ] || in_arm python3 -m venv /opt/venv >>"$log" 2>&1
in_arm /opt/venv/bin/pip install -q -e '/opt/nncompress[test]' >>"$log" 2>&1
in_arm /opt/venv/bin/pip list 2>/dev/null | grep -Ei '^(numpy|numba|llvmlite|constriction|nncompress) ' | tee -a "$log"

step "x86-64 reference run"
mkdir -p "$work/x86"
(cd "$repo" && PYTHONPATH="$repo" "$host_python" bench/portability_check.py --text "$text" \
    --out "$work/x86/results.json" --save-archives "$work/x86/archives") >>"$log" 2>&1
cp -r "$work/x86" "$root/opt/results/x86"

step "arm64 run (emulated; numba compiles first)"
set +e
in_arm /bin/sh -c 'cd /opt/nncompress && /opt/venv/bin/python bench/portability_check.py \
    --text /opt/results/text --out /opt/results/arm64.json --save-archives /opt/results/arm64 \
    --reference /opt/results/x86/results.json --archives /opt/results/x86/archives' >>"$log" 2>&1
arm_status=$?

step "x86-64 decodes the arm64 archives"
(cd "$repo" && PYTHONPATH="$repo" "$host_python" bench/portability_check.py --text "$text" \
    --out "$work/x86/cross.json" --reference "$root/opt/results/arm64.json" \
    --archives "$root/opt/results/arm64") >>"$log" 2>&1
cross_status=$?

step "golden tests on arm64"
in_arm /bin/sh -c 'cd /opt/nncompress && /opt/venv/bin/python -m pytest -q -p no:cacheprovider \
    tests/test_golden.py tests/test_coder_twin.py' >"$work/golden.txt" 2>&1
golden_status=$?
set -e
cat "$work/golden.txt" >>"$log"

minutes=$(( ($(date +%s) - started) / 60 ))
summary=$work/summary.md
{
    echo "### Run of $(date -u '+%Y-%m-%d %H:%M UTC') ($minutes min)"
    echo
    echo "- host: $(uname -m), kernel $(uname -r); guest: Debian $suite arm64 under $(qemu-aarch64-static --version | head -1)"
    echo "- arm64 packages: $(in_arm /opt/venv/bin/pip list 2>/dev/null | grep -Ei '^(numpy|numba|llvmlite|constriction) ' | tr -s ' ' | paste -sd ',' -)"
    echo "- arm64 coder: $(in_arm /bin/sh -c 'cd /opt/nncompress && /opt/venv/bin/python -c "from nncompress import coder; print(coder.coder_description())"')"
    echo "- text input: first 16 KiB of $(basename "$text"); binary input: bench/portability_check.py binary_input()"
    echo "- arm64 vs x86-64 (archives, probabilities, arm64 decoding x86-64 archives): exit $arm_status"
    echo "- x86-64 decoding arm64 archives: exit $cross_status"
    echo "- golden tests on arm64: exit $golden_status, $(tail -1 "$work/golden.txt")"
    echo
    echo "| input-level | archive sha256 (x86-64) | same on arm64 | probabilities same | cross-decodes |"
    echo "|---|---|---|---|---|"
    "$host_python" - "$work/x86/results.json" "$root/opt/results/arm64.json" "$work/x86/cross.json" <<'EOF'
import json, sys
x86, arm, cross = (json.load(open(p)) for p in sys.argv[1:4])
for key, run in x86["runs"].items():
    other = arm["runs"][key]
    both = other.get("decodes_reference_archive") and cross["runs"][key].get("decodes_reference_archive")
    print(f"| {key} | {run['archive'][:16]}... ({run['archive_bytes']} B) | "
          f"{'yes' if other['archive'] == run['archive'] else 'NO'} | "
          f"{'yes' if other['probabilities'] == run['probabilities'] else 'NO'} | "
          f"{'yes' if both else 'NO'} |")
EOF
} > "$summary"
cat "$summary"
step "done: $summary (log: $log)"
[ $arm_status = 0 ] && [ $cross_status = 0 ] && [ $golden_status = 0 ]
