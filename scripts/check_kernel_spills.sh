#!/usr/bin/env bash
# No symmcomm kernel spills registers to local memory on sm_90 (Hopper, the GPUs the project
# measures on) beyond the known cases listed below: the collective kernels are latency-bound
# copies whose speed rests on values staying in registers, and a __launch_bounds__ minimum of
# resident CTAs (the MoE rows and send-back launches) turns register growth into silent spills.
# Compiles each library .cu file of src/kernels and src/formats once more for sm_90 alone with
# ptxas's report (-Xptxas=-v), using the build directory's own compile command; exits 1 naming
# each kernel that spills more than it is allowed.
# Usage: scripts/check_kernel_spills.sh [build-dir, default build-test (configured by test.sh)]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-test}"
if [ ! -f "$build/build.ninja" ]; then
  echo "check_kernel_spills: $build is not a configured Ninja build (run scripts/test.sh first)"
  exit 1
fi

# Known spills, bytes of spill stores allowed, by the start of the kernel's demangled name.
# Each is ptxas's choice at the register count shown, not measured against the alternative.
known_spills() {
  cat <<'KNOWN'
void symmcomm::detail::lsa::reduce_kernel<symmcomm::detail::lsa::LsaPolicy, __nv_bfloat16, true, 8, 8>	4	NVFP4 one-shot reduce over 8 peers: 40 registers under ReduceShape::kMinCtasPerSm resident CTAs
void symmcomm::detail::lsa::reduce_kernel<symmcomm::detail::lsa::LsaPolicy, float, true, 8, 8>	8	the same with fp32 output
void symmcomm::detail::lsa::(anonymous namespace)::ll_device_counts_reduce_kernel<true>	8	NVFP4 device-count LL reduce, at 128 registers
KNOWN
}

allowed_bytes() {  # $1: demangled kernel name; prints the bytes allowed (0 when not listed)
  local prefix bytes why
  while IFS=$'\t' read -r prefix bytes why; do
    case "$1" in "$prefix"*) echo "$bytes"; return ;; esac
  done < <(known_spills)
  echo 0
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bad=0
kernels=0
known=0
for src in $(cd "$root" && git ls-files 'src/kernels/*.cu' 'src/formats/*.cu'); do
  object="src/CMakeFiles/symmcomm.dir/${src#src/}.o"
  cmd="$(cd "$build" && ninja -t commands "$object" 2>/dev/null | tail -1)"
  case "$cmd" in
    *nvcc*) ;;
    *) echo "check_kernel_spills: no nvcc command for $object in $build"; exit 1 ;;
  esac
  # sm_90 only, the object to scratch, no dependency file.
  cmd="$(sed -E -e 's/--generate-code=arch=compute_[0-9]+,code=\[[^]]*\]//g' \
    -e 's/ -MD -MT [^ ]+ -MF [^ ]+//' -e 's| -o [^ ]+| -o '"$work"'/k.o|' <<<"$cmd")"
  report="$work/report.txt"
  if ! (cd "$build" && eval "$cmd --generate-code=arch=compute_90,code=[sm_90] -Xptxas=-v") \
    >"$report" 2>&1; then
    cat "$report"
    echo "check_kernel_spills: $src did not compile"
    exit 1
  fi
  # ptxas prints, per kernel: "Compiling entry function 'NAME' for 'sm_90'", a line with its
  # spill stores, then one with its registers.
  while IFS=$'\t' read -r name spills regs; do
    kernels=$((kernels + 1))
    [ "$spills" = 0 ] && continue
    pretty="$(c++filt <<<"$name" | sed -E 's/\([^()]*\)$//')"
    limit="$(allowed_bytes "$pretty")"
    if [ "$spills" -le "$limit" ]; then
      known=$((known + 1))
      echo "known: $src: $pretty: $spills bytes spill stores (allowed $limit), $regs registers"
    else
      echo "SPILLS: $src: $pretty: $spills bytes spill stores (allowed $limit), $regs registers"
      bad=1
    fi
  done < <(awk -v q="'" '
    /Compiling entry function/ { split($0, parts, q); name = parts[2] }
    /bytes spill stores/ && name != "" {
      for (i = 1; i < NF; i++) if ($i == "spill" && $(i + 1) == "stores,") spills = $(i - 2)
    }
    /Used [0-9]+ registers/ && name != "" {
      match($0, /Used [0-9]+/); print name "\t" spills "\t" substr($0, RSTART + 5, RLENGTH - 5)
      name = ""
    }' "$report")
done
if [ "$bad" = 0 ]; then
  echo "check_kernel_spills: $kernels kernels on sm_90, none spills beyond the $known known cases"
fi
exit "$bad"
