#!/usr/bin/env bash
# Issue 38's H200 runs, one stage per device call (each fits the device's 10-minute call):
#   benchmarks/h200_issue38.sh aa      10 A/A studies on ResNet-50 b32, 3 background builds (item 4)
#   benchmarks/h200_issue38.sh effect  10 studies of a route about 10 % faster on ResNet-50, the tuner's
#                                      12-round budget (item 4; freezing screened 1.09x on the H100)
#   benchmarks/h200_issue38.sh studies gpu_study's new mode on ResNet-50, ViT-B/16, ConvNeXt-Tiny (items 1-3)
#   benchmarks/h200_issue38.sh spy     the studies with py-spy on the tuner's process (where its threads wait)
#   benchmarks/h200_issue38.sh turn    the studies (ResNet-50, ConvNeXt-Tiny, ViT-B/16), then where a round's
#                                      turn goes: each study's round-0 processes loaded again, their
#                                      first call under cProfile, three calls and the samples
#   benchmarks/h200_issue38.sh threads ConvNeXt-Tiny and ResNet-50 with round processes building their
#                                      model on torch's default threads, then on one (GS_LOAD_THREADS)
#   benchmarks/h200_issue38.sh early   ResNet-50 and ViT-B/16 with round processes started once the default
#                                      route has a result (before session 50), then from its build (the
#                                      tuner's rule), each model in turn; then ConvNeXt-Tiny with the rule
#   benchmarks/h200_issue38.sh rounds  ConvNeXt-Tiny and ResNet-50 twice: round processes loading one per
#                                      build core (the tuner's rule), then LOADS at once (default 4;
#                                      "physical": one per physical build core, the same as the rule on
#                                      the lent H100s, which have no hyperthreads; item 2, round 0)
# Output (tables, JSON lines) goes to $OUT (default /tmp/h200_out). Each stage stops starting new
# studies after BUDGET seconds (default 480). aa and effect run REPEATS studies (10) numbered from
# FIRST (0): a second call with FIRST=6 REPEATS=4 continues a first one that ran 6 (the effect's
# freezing route loads on the device, never beside a measurement: in session 50 each of its
# rounds took 12-33 s and a study 142-224 s, so 4 studies fitted two calls; since then its turn in
# round 0 loads its processes of rounds 0-3 at once, round 4's those of rounds 4-7...).
set -euo pipefail
cd "$(dirname "$0")/.."
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONPATH=$PWD PYTHONUNBUFFERED=1 GPTUNER_LOCK_DIR=/tmp/locks
export GPTUNER_START_METHOD=auto GPTUNER_OVERLAP=on
OUT=${OUT:-/tmp/h200_out}; BUDGET=${BUDGET:-480}; W=/tmp/h200_issue38
mkdir -p "$OUT" "$W"
PY=${PY:-python3}
MODEL="$PWD/benchmarks/torchvision_models.py:resnet50"
DATA="$W/resnet50.npz"
[ -f "$DATA" ] || $PY -c "import sys; sys.path.insert(0, 'benchmarks'); import torchvision_models as m; m.write_dataset('$DATA', 'resnet50')"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv > "$OUT/gpu_$1.csv" 2>&1 || true
lscpu > "$OUT/lscpu.txt" 2>&1 || true
# the device image writes no bytecode (PYTHONDONTWRITEBYTECODE): fill the cache once, as an installed
# torch has it, so that a study's first processes do not compile torch's sources (16.8 s, not 4.4 s),
# nor the tuner's scipy.stats (session 54: 18.9 s of its threads in the first study)
$PY -c "import time; t = time.time(); import torch, torchvision, torch._inductor.compile_fx, torch._dynamo, scipy.stats; print(f'bytecode warm-up: {time.time() - t:.1f} s')" | tee "$OUT/warmup_$1.txt" || true
case "$1" in
  aa)
    $PY benchmarks/aa_torch.py --device cuda:0 --dir "$W/aa" --model "$MODEL" --dataset "$DATA" \
      --batch-size 32 --copies 2 --rounds 4 --repeats "${REPEATS:-10}" --first-study "${FIRST:-0}" \
      --background-builds 3 --time-budget "$BUDGET" --json "$OUT/aa.jsonl" 2>&1 | tee "$OUT/aa.txt" ;;
  effect)
    $PY benchmarks/aa_torch.py --device cuda:0 --dir "$W/effect" --model "$MODEL" --dataset "$DATA" \
      --batch-size 32 --rounds 12 --repeats "${REPEATS:-10}" --first-study "${FIRST:-0}" --background-builds "${BG:-3}" \
      --effect-expr "${EFFECT_EXPR:--torch:precision=fp32 -inductor:freezing=[on]}" \
      --time-budget "$BUDGET" --json "$OUT/effect.jsonl" 2>&1 | tee "$OUT/effect.txt" ;;
  studies)
    $PY benchmarks/gpu_study.py --dir "$W/gs" --build-workers 7 --json "$OUT/gs.jsonl" \
      --plan "${PLAN:-resnet50:new,vit_b_16:new,convnext_tiny:new}" 2>&1 | tee "$OUT/gs.txt" ;;
  turn)  # session 53: a round's timed part is its processes' first calls, samples and hand-overs
    # (H200, session 52: ConvNeXt-Tiny 4.2-5.0 s for about 2.25 s of samples); the rows' rounds give
    # `sampling` apart from `measure`, load_profile.py --first-call what the first call does
    $PY benchmarks/gpu_study.py --dir "$W/gs" --build-workers 7 --json "$OUT/gs.jsonl" \
      --plan "${PLAN:-resnet50:new,convnext_tiny:new,vit_b_16:new}" 2>&1 | tee "$OUT/gs.txt"
    for study in "$W"/gs/*_new; do
      $PY benchmarks/load_profile.py --study "$study" --folders r0_ --limit 3 --first-call --top 40 \
        --out "$OUT/turn_$(basename "$study").txt" 2>&1 | tee -a "$OUT/gs.txt" || true
    done ;;
  rounds)  # how many round processes load at once: the tuner's rule, then LOADS (session 47: ConvNeXt's
    # 15 loads finished in round order 1.2 s apart, a queue that fewer loads at once may shorten for round 0)
    for loads in "" "${LOADS:-4}"; do
      GS_ROUND_LOADS=$loads $PY benchmarks/gpu_study.py --dir "$W/gr${loads}" --build-workers 7 \
        --json "$OUT/gr.jsonl" --plan "${PLAN:-convnext_tiny:new,resnet50:new}" 2>&1 | tee -a "$OUT/gr.txt"
    done
    # one load of the default's and of the fp16 finalist's round-0 route again, alone, under cProfile
    # (without and with the keys the fork server computes), then in 1, 4 and 12 processes at once:
    # where a load's seconds go, and whether loads side by side wait for something they share
    $PY benchmarks/load_profile.py --study "$(ls -d "$W"/gr/*_new | head -1)" --folders r0_00000,r0_00005 --parallel 1,4,12 \
      --out "$OUT/load_profile.txt" 2>&1 | tee -a "$OUT/gr.txt" || true ;;
  threads)  # round processes build their model on one thread while loading ahead (the tuner since
    # session 49) against torch's default, one thread per core (session 49: ConvNeXt's factory took
    # 0.3-0.5 s alone, 10-27 s in a study's 15 round processes loading at once)
    for t in default ""; do
      GS_LOAD_THREADS=$t $PY benchmarks/gpu_study.py --dir "$W/gt${t}" --build-workers 7 \
        --json "$OUT/gt.jsonl" --plan "${PLAN:-convnext_tiny:new,resnet50:new}" 2>&1 | tee -a "$OUT/gt.txt"
    done ;;
  early)  # session 50: round processes start from the default's build (its result came when every
    # build had ended: ResNet-50's round 0 loaded from 18.5 to 25.6 s, the device free from 23.6 s)
    for step in ${PLAN:-resnet50:result resnet50: vit_b_16:result vit_b_16: convnext_tiny:}; do
      GS_ROUNDS_FROM=${step#*:} $PY benchmarks/gpu_study.py --dir "$W/ge${step#*:}" --build-workers 7 \
        --json "$OUT/ge.jsonl" --plan "${step%%:*}:new" 2>&1 | tee -a "$OUT/ge.txt"
    done ;;
  spy)  # the studies with py-spy (SPY, default .pyspy/py-spy: carry it, the device has none)
    # sampling the tuner's own process (each study's `gpu_study.py --child`), every thread with
    # idle ones, 50 a second in time order (speedscope): session 54 on the H100, a finalist's
    # result reached the round line's hints 0.1-3.7 s late, and round 0 began 2.3 s after the
    # last result; what the tuner's threads did meanwhile
    SPY=${SPY:-.pyspy/py-spy}
    $PY benchmarks/gpu_study.py --dir "$W/gs" --build-workers 7 --json "$OUT/gs.jsonl" \
      --plan "${PLAN:-resnet50:new,convnext_tiny:new,vit_b_16:new}" > "$OUT/gs.txt" 2>&1 &
    main=$! seen=" " n=0
    while kill -0 "$main" 2>/dev/null; do
      for pid in $(pgrep -f "gpu_study.py --child" || true); do
        case "$seen" in *" $pid "*) continue ;; esac
        seen="$seen$pid " n=$((n + 1))
        "$SPY" record --pid "$pid" --threads --idle --nonblocking --rate 50 --format speedscope \
          -o "$W/spy_$n.json" > "$W/spy_$n.log" 2>&1 &
      done
      sleep 0.05
    done
    wait || true
    tail -3 "$OUT/gs.txt"; cat "$W"/spy_*.log || true
    tar -C "$W" -czf "$OUT/spy.tar.gz" $(cd "$W" && ls spy_*) ;;
  *) echo "usage: $0 aa|effect|studies|turn|rounds|threads|early|spy" >&2; exit 2 ;;
esac
