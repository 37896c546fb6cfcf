#!/usr/bin/env bash
# Trains GraphSAGE on several hosts with torchrun (examples/dist_train_sage.py, worker topology):
# run it on every host, NODE_RANK 0 .. HOSTS-1, e.g.
#
#   HOSTS=2 NODE_RANK=0 MASTER=host0 PROCS=2 REPLICAS=2 PARTS=/shared/products-2 \
#       examples/dist/torchrun.sh --epochs 10          # on host0; NODE_RANK=1 on host1
#
# Every trainer serves one partition in-process (listening on every interface) and registers it
# in torchrun's store at MASTER; the trainers find each other's servers there. REPLICAS=2 serves
# every partition twice (HOSTS x PROCS = partitions x REPLICAS): the calls to a partition are
# spread over its two servers, and a call to one that is lost goes to the other. PARTS is a
# partitioned dataset on storage every host reads (`volley partition DIR PARTS --parts K`);
# without it, one host partitions the bundled Cora for itself (HOSTS=1 only). Arguments after
# the variables go to the training script (--epochs, --batch-size, --token-file, ...);
# TORCHRUN_ARGS to torchrun (Debian's torch 1.13 on Python 3.11: "--redirects 1 --tee 1").
set -euo pipefail
: "${HOSTS:?the number of hosts}" "${NODE_RANK:?this host's index, 0 .. HOSTS-1}"
: "${MASTER:?the host of node rank 0 (torchrun's store)}"
PROCS=${PROCS:-1}
REPLICAS=${REPLICAS:-1}
PORT=${PORT:-29500}
PYTHON=${PYTHON:-python3}
read -r -a torchrun_args <<< "${TORCHRUN_ARGS:-}"
args=(--listen 0.0.0.0 --replicas "$REPLICAS")
if [[ -n "${PARTS:-}" ]]; then
  args+=(--partitions "$PARTS")
elif [[ "$HOSTS" != 1 ]]; then
  echo "torchrun.sh: on several hosts, PARTS must name a partitioned dataset they all read" >&2
  exit 2
fi
exec "$PYTHON" -m torch.distributed.run --nnodes "$HOSTS" --node_rank "$NODE_RANK" \
  --nproc_per_node "$PROCS" --master_addr "$MASTER" --master_port "$PORT" "${torchrun_args[@]}" \
  "$(dirname "$0")/../dist_train_sage.py" "${args[@]}" "$@"
