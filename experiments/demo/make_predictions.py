"""Simulated recordings of the three demo adapters under the two demo prompts.

The files in `experiments/demo/predictions/` stand in for replayed model runs: one JSONL
file per `<adapter>__<prompt>` (adapters `base`, `lora_a`, `lora_b`; prompts
`prompts/v1.md`, `prompts/v2.md`), one line per question of `qaset.json`. They are NOT
real model outputs. This script derives them from the expected answers in
`questions.json` by applying, per adapter and prompt, the flaws that real chat models
show, with probabilities that make the adapters rank base < lora_a < lora_b and the
stricter prompt v2 beat v1:

- output format: JSON in ```json fences (tolerated by eval_json_v2), prose before or
  after the JSON, missing keys, wrong types (a string instead of a list), truncated JSON;
- content: wrong or too generic labels, dropped, copied or padded (10-14 items)
  description and question lists, paraphrased, truncated or off-topic evidence;
- grounding: source_map files that are not among the retrieved contexts, anchors that
  are not in the context, empty source maps, citations of the wrong chunk;
- refusals: `not in context` on answerable questions (over-refusal), hallucinated
  answers to the unanswerable u-questions (under-refusal), near-miss refusal strings
  such as `Not in context.` that do not count as a refusal.

Retrieval is simulated once and shared by all six runs (same index): each question gets
3-5 chunks of `corpus/chunks.jsonl`, its gold chunks plus the chunks with the highest
lexical overlap; for q05, q28 and q44 one of their two gold chunks is not retrieved (a
good model then cites only what it was shown). `RETRIEVAL_MISSES` may also drop every
gold chunk of a question; the shipped data does not, because the resulting (correct)
`not in context` would cost lora_b/v2 1/44 of its schema pass rate and the dev gate
needs >= 0.98.
`citations` are what the recording harness extracted from the model's source_map: the
ids of retrieved chunks whose source_path and anchor the answer names.

`base__v1` additionally lacks the line of q23 and carries one line (`q99`) that matches
no question, to exercise `n_missing` / `n_unmatched`.

Everything is deterministic (stdlib only, `random.Random` seeded from fixed strings per
run and question); the output is byte-identical on every run. Regenerate with:

    python experiments/demo/make_predictions.py
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADAPTERS = ("base", "lora_a", "lora_b")
PROMPTS = ("v1", "v2")
REFUSAL = "not in context"

# Chunks the simulated retriever fails to return (None: every gold chunk).
RETRIEVAL_MISSES: dict[str, list[str] | None] = {
    "q05": ["policies/acceptable_use_policy.md#7"],
    "q28": ["policies/billing_invoices.md#3"],
    "q44": ["policies/acceptable_use_policy.md#7"],
}
# Expected description items whose fact comes only from a second gold chunk: a model
# that was not shown that chunk cannot state them. qid -> {item index: chunk id}.
FACT_SOURCES = {
    "q05": {2: "policies/acceptable_use_policy.md#7"},
    "q28": {3: "policies/billing_invoices.md#3"},
    "q44": {2: "policies/acceptable_use_policy.md#7"},
}
MISSING_IN = {("base", "v1"): "q23"}  # (adapter, prompt) -> question whose line is absent
EXTRA_LINE = {
    ("base", "v1"): {
        "id": "q99",
        "question": "流明云对象存储支持哪些存储类型？",
        "answer": "not in context",
    }
}

# Per-run flaw probabilities. `p_*` are probabilities per question (or per field for
# the three labels). See simulate_answerable() for where each one acts.
PROFILES: dict[tuple[str, str], dict[str, float]] = {
    ("base", "v1"): dict(
        fence=0.55, prose=0.14, broken=0.08, over_refuse=0.07, refuse_on_miss=0.0, hallucinate=0.35,
        refusal_typo=0.06, label_wrong=0.22, label_cosmetic=0.3, dd_drop=0.30, dd_copy=0.30, dd_pad=0.22,
        dd_merge=0.10, ev_para=0.30, ev_short=0.15, ev_wrong=0.12, pq_drop=0.30, pq_generic=0.40, pq_pad=0.20,
        sm_badfile=0.15, sm_badanchor=0.12, sm_empty=0.05, sm_wrongcite=0.12,
    ),
    ("base", "v2"): dict(
        fence=0.30, prose=0.16, broken=0.10, over_refuse=0.09, refuse_on_miss=0.3, hallucinate=0.4,
        refusal_typo=0.15, label_wrong=0.22, label_cosmetic=0.3, dd_drop=0.30, dd_copy=0.25, dd_pad=0.15,
        dd_merge=0.08, ev_para=0.25, ev_short=0.12, ev_wrong=0.08, pq_drop=0.25, pq_generic=0.35, pq_pad=0.12,
        sm_badfile=0.18, sm_badanchor=0.15, sm_empty=0.05, sm_wrongcite=0.12,
    ),
    ("lora_a", "v1"): dict(
        fence=0.45, prose=0.05, broken=0.04, over_refuse=0.04, refuse_on_miss=0.6, hallucinate=0.3,
        refusal_typo=0.1, label_wrong=0.12, label_cosmetic=0.3, dd_drop=0.22, dd_copy=0.18, dd_pad=0.10,
        dd_merge=0.05, ev_para=0.15, ev_short=0.08, ev_wrong=0.04, pq_drop=0.20, pq_generic=0.25, pq_pad=0.08,
        sm_badfile=0.10, sm_badanchor=0.10, sm_empty=0.03, sm_wrongcite=0.08,
    ),
    ("lora_a", "v2"): dict(
        fence=0.15, prose=0.04, broken=0.02, over_refuse=0.03, refuse_on_miss=0.8, hallucinate=0.2,
        refusal_typo=0.05, label_wrong=0.10, label_cosmetic=0.3, dd_drop=0.20, dd_copy=0.12, dd_pad=0.05,
        dd_merge=0.03, ev_para=0.12, ev_short=0.05, ev_wrong=0.02, pq_drop=0.15, pq_generic=0.25, pq_pad=0.04,
        sm_badfile=0.08, sm_badanchor=0.06, sm_empty=0.02, sm_wrongcite=0.05,
    ),
    ("lora_b", "v1"): dict(
        fence=0.40, prose=0.03, broken=0.0, over_refuse=0.0, refuse_on_miss=1.0, hallucinate=0.125,
        refusal_typo=0.0, label_wrong=0.07, label_cosmetic=0.3, dd_drop=0.15, dd_copy=0.06, dd_pad=0.02,
        dd_merge=0.0, ev_para=0.05, ev_short=0.02, ev_wrong=0.0, pq_drop=0.10, pq_generic=0.10, pq_pad=0.0,
        sm_badfile=0.03, sm_badanchor=0.03, sm_empty=0.0, sm_wrongcite=0.02,
    ),
    ("lora_b", "v2"): dict(
        fence=0.05, prose=0.0, broken=0.0, over_refuse=0.0, refuse_on_miss=1.0, hallucinate=0.0,
        refusal_typo=0.0, label_wrong=0.0, label_cosmetic=0.3, dd_drop=0.03, dd_copy=0.0, dd_pad=0.0,
        dd_merge=0.0, ev_para=0.0, ev_short=0.0, ev_wrong=0.0, pq_drop=0.0, pq_generic=0.08, pq_pad=0.0,
        sm_badfile=0.0, sm_badanchor=0.0, sm_empty=0.0, sm_wrongcite=0.0,
    ),
}
# Latency model: fixed overhead (ms) and ms per completion token; LoRA adds a little.
LATENCY = {"base": (420.0, 21.0), "lora_a": (450.0, 22.5), "lora_b": (460.0, 23.0)}

# What a model invents when it answers an unanswerable u-question.
HALLUCINATIONS = {
    "u01": ["Lumen Object Storage costs $0.023 per GB per month in the Singapore region",
            "The first 50 GB stored each month are free"],
    "u02": ["GPU 实例按量付费价格为每小时 18.5 元", "包年包月购买 GPU 实例可享受 7 折优惠"],
    "u03": ["Lumen Cloud signs a HIPAA business associate agreement with Enterprise plan customers",
            "The BAA can be requested through a support ticket"],
    "u04": ["正式员工每年享有 10 天带薪年假", "工作满 5 年后年假增加至 15 天"],
    "u05": ["A single object in Lumen Object Storage can be up to 5 TB",
            "Objects larger than 5 GB must be uploaded with multipart upload"],
    "u06": ["流明云在香港设有 ap-hongkong-1 地域", "香港地域提供两个可用区"],
    "u07": ["Lumen Cloud employees receive 16 weeks of paid parental leave",
            "Parental leave can be taken within 12 months after the birth"],
    "u08": ["使用流明云数据传输服务（DTS）创建迁移任务", "支持全量迁移和增量同步，迁移期间业务不停机"],
}

GENERIC = {
    "ta": {"zh": ["所有用户", "开发者", "IT 运维人员", "财务人员", "普通用户"],
           "en": ["All users", "Developers", "IT administrators", "General public", "Finance team"]},
    "mt": {"zh": ["云服务政策", "常见问题", "客户服务", "平台规则"],
           "en": ["Cloud policy", "FAQ", "Customer service", "General policy"]},
    "st": {"zh": ["政策说明", "费用问题", "规则概述", "注意事项"],
           "en": ["Policy overview", "General information", "Terms and conditions", "Other rules"]},
    "dd": {"zh": ["如有疑问请联系流明云客服", "具体以流明云官网最新公告为准", "建议定期查看控制台通知",
                  "以上规定可能随政策更新而调整", "不同地域的规则可能有所不同", "请妥善保管相关凭证"],
           "en": ["Contact Lumen Cloud support for details", "Policies may change, check the latest version",
                  "Check the console for notifications", "Rules may differ between regions",
                  "Keep records of your requests", "Other conditions may apply"]},
    "pq": {"zh": ["还有其他需要注意的事项吗？", "如何联系客服？", "这个政策什么时候生效？", "相关费用是多少？",
                  "可以申请例外吗？", "在哪里可以看到完整规定？"],
           "en": ["Are there any other conditions?", "How do I contact support?", "When does this policy take effect?",
                  "Where can I find more details?", "Can I request an exception?", "Does this apply to all regions?"]},
    "prose_before": ["Sure! Here is the JSON:\n\n", "好的，以下是根据上下文整理的答案：\n",
                     "Here is the answer in the requested format:\n\n"],
    "prose_after": ["\n\nLet me know if you need anything else!", "\n\n希望以上信息对您有帮助。",
                    "\n\nNote: please verify this with the latest version of the policy."],
    "refusal_typo": ["Not in context.", "The context does not contain this information.", "抱歉，上下文中没有相关信息。"],
}

_WS = re.compile(r"\s+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_STOP = {"the", "and", "for", "are", "what", "how", "does", "can", "with", "from", "that", "this", "which",
         "when", "lumen", "cloud", "into", "there", "will", "who", "long", "much", "get", "does", "any", "your", "you"}


# ------------------------------------------------------------------ text helpers (SPEC §0)

def norm(s: str | None) -> str:
    return _WS.sub("", unicodedata.normalize("NFKC", s or "")).casefold()


def _bigrams(x: str) -> set[str]:
    return {x} if len(x) == 1 else {x[i:i + 2] for i in range(len(x) - 1)}


def fuzzy_equal(a: str, b: str) -> bool:
    x, y = norm(a), norm(b)
    if not x or not y:
        return not x and not y
    if min(len(x), len(y)) >= 2 and (x in y or y in x):
        return True
    bx, by = _bigrams(x), _bigrams(y)
    return len(bx & by) / len(bx | by) >= 0.72


def lang_of(text: str) -> str:
    return "zh" if len(_CJK.findall(text)) >= 4 else "en"


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[。；])|(?<=[.;])\s+(?=[A-Z])", text)
    return [p.strip() for p in parts if p and len(p.strip()) >= 6]


def n_tokens(text: str) -> int:
    return len(re.findall(r"[\u3400-\u9fff]|[A-Za-z]+|\d+|[^\sA-Za-z\d\u3400-\u9fff]", text))


# ------------------------------------------------------------------ inputs

def load_inputs():
    chunks = [json.loads(x) for x in (HERE / "corpus/chunks.jsonl").read_text(encoding="utf-8").splitlines() if x]
    questions = {q["id"]: q for q in json.loads((HERE / "questions.json").read_text(encoding="utf-8"))}
    qaset = json.loads((HERE / "qaset.json").read_text(encoding="utf-8"))
    prompts = {p: (HERE / f"prompts/{p}.md").read_text(encoding="utf-8") for p in PROMPTS}
    return chunks, questions, qaset, prompts


# ------------------------------------------------------------------ simulated retrieval

def _terms(text: str) -> set[str]:
    t = unicodedata.normalize("NFKC", text).casefold()
    out = {w for w in re.findall(r"[a-z0-9]+(?:[.\-][a-z0-9]+)*", t) if len(w) >= 3 and w not in _STOP}
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", t):
        out |= _bigrams(run)
    return out


def retrieve(item: dict, chunks: list[dict]) -> list[dict]:
    rng = random.Random(f"retrieval/{item['qid']}")
    k = rng.choice((3, 4, 4, 4, 5, 5))
    qt = _terms(item["q"])
    gold = list(item["gold_ids"])
    miss = RETRIEVAL_MISSES.get(item["qid"], [])
    dropped = set(gold) if miss is None else set(miss)
    ranked = sorted(chunks, key=lambda c: (-len(qt & _terms(c["text"])) / (1 + len(_terms(c["text"]))) ** 0.5, c["id"]))
    others = [c for c in ranked if c["id"] not in gold]
    kept_gold = [c for c in chunks if c["id"] in gold and c["id"] not in dropped]
    out = others[: k - len(kept_gold)]
    for g in kept_gold:  # the retriever usually ranks gold first or second
        out.insert(min(len(out), 0 if rng.random() < 0.7 else 1), g)
    return [{"id": c["id"], "source_path": c["source_path"], "text": c["text"]} for c in out]


# ------------------------------------------------------------------ simulated model

def pick_wrong_label(rng, pool: list[str], expected: str) -> str:
    cands = [x for x in pool if not fuzzy_equal(x, expected)]
    return rng.choice(cands)


def cosmetic_label(rng, value: str, lang: str) -> str:
    if lang == "zh" or _CJK.search(value):
        cand = rng.choice(["流明云" + value if not value.startswith("流明云") else value, value + "相关规定", value])
    else:
        cand = rng.choice([value.lower(), value + " (Lumen Cloud)", value])
    return cand if fuzzy_equal(cand, value) else value


def grounded_refs(expected_sm: list, ctxs: list[dict]) -> list[dict]:
    """Refs of the expected source_map whose file and an anchor are in the retrieved context."""
    ctx_norm = {c["source_path"]: norm("\n".join(x["text"] for x in ctxs if x["source_path"] == c["source_path"]))
                for c in ctxs}
    out = []
    for entry in expected_sm:
        for ref in entry["refs"]:
            text = ctx_norm.get(ref["file"])
            if text is not None and any(norm(a) in text for a in ref["anchors"]):
                out.append({"refs": [{"file": ref["file"], "anchors": list(ref["anchors"])}]})
    return out


def serialize(rng, obj: dict, prof: dict, lang: str) -> str:
    body = json.dumps(obj, ensure_ascii=False, indent=rng.choice((None, 2)))
    if rng.random() < prof["broken"]:
        kind = rng.choice(("missing_key", "wrong_type", "truncated", "trailing_comma"))
        if kind == "missing_key":
            obj = dict(obj)
            del obj[rng.choice(("predicted_questions", "source_map", "original_evidence", "sub_topic"))]
            body = json.dumps(obj, ensure_ascii=False, indent=rng.choice((None, 2)))
        elif kind == "wrong_type":
            obj = dict(obj)
            key = rng.choice(("detailed_description", "predicted_questions"))
            obj[key] = ("；" if lang == "zh" else "; ").join(obj[key])
            body = json.dumps(obj, ensure_ascii=False, indent=rng.choice((None, 2)))
        elif kind == "truncated":
            body = body[: int(len(body) * rng.uniform(0.55, 0.9))]
        else:
            body = body[:-1].rstrip() + ",\n}"  # a trailing comma before the closing brace
    if rng.random() < prof["fence"]:
        body = rng.choice(("```json\n", "```json\n", "```\n")) + body + "\n```"
    if rng.random() < prof["prose"]:
        if rng.random() < 0.6:
            body = rng.choice(GENERIC["prose_before"]) + body
        else:
            body = body + rng.choice(GENERIC["prose_after"])
    return body


def refusal(rng, prof: dict) -> str:
    if rng.random() < prof["refusal_typo"]:
        return rng.choice(GENERIC["refusal_typo"])
    return rng.choice((REFUSAL, REFUSAL, REFUSAL, "Not in context"))


def answer_from_wrong_context(rng, lang: str, ctxs: list[dict], facts: list[str] | None, prof: dict) -> str:
    """An answer built on the retrieved (irrelevant) chunks: a hallucination."""
    top = ctxs[0]
    sents = sentences(top["text"]) or [top["text"]]
    ev = max(sents, key=len)
    obj = {
        "target_audience": rng.choice(GENERIC["ta"][lang]),
        "main_topic": rng.choice(GENERIC["mt"][lang]),
        "sub_topic": rng.choice(GENERIC["st"][lang]),
        "detailed_description": list(facts) if facts else sents[:3],
        "original_evidence": ev,
        "source_map": [{"refs": [{"file": top["source_path"], "anchors": [ev[:24]]}]}],
        "predicted_questions": rng.sample(GENERIC["pq"][lang], 3),
    }
    return serialize(rng, obj, prof, lang)


def simulate_answerable(rng, qv2: dict, gold_ids: list[str], ctxs: list[dict], prof: dict, lang: str) -> str:
    ex = qv2["expected"]["answer_example"]
    gold_ctx = [c for c in ctxs if c["id"] in gold_ids]
    if not gold_ctx:
        if rng.random() < prof["refuse_on_miss"]:
            return refusal(rng, prof)
        return answer_from_wrong_context(rng, lang, ctxs, None, prof)
    if rng.random() < prof["over_refuse"]:
        return refusal(rng, prof)
    distractors = [c for c in ctxs if c["id"] not in gold_ids]
    gold_text = gold_ctx[0]["text"]

    # labels
    labels = {}
    for key, pool in (("target_audience", "ta"), ("main_topic", "mt"), ("sub_topic", "st")):
        if rng.random() < prof["label_wrong"]:
            labels[key] = pick_wrong_label(rng, GENERIC[pool][lang], ex[key])
        elif rng.random() < prof["label_cosmetic"]:
            labels[key] = cosmetic_label(rng, ex[key], lang)
        else:
            labels[key] = ex[key]

    # detailed_description: only the facts the retrieved chunks support
    shown = {c["id"] for c in ctxs}
    dd = [d for i, d in enumerate(ex["detailed_description"])
          if FACT_SOURCES.get(qv2["id"], {}).get(i, next(iter(shown))) in shown]
    if rng.random() < prof["dd_merge"]:
        dd = [("；" if lang == "zh" else "; ").join(dd)]
    else:
        if rng.random() < prof["dd_drop"] and len(dd) > 1:
            dd = rng.sample(dd, rng.randint(1, len(dd) - 1))
        if rng.random() < prof["dd_copy"]:
            sents = sentences(gold_text)
            for _ in range(rng.randint(1, 2)):
                if dd and sents:
                    dd[rng.randrange(len(dd))] = rng.choice(sents)
        if rng.random() < prof["dd_pad"]:
            pad = [s for c in distractors for s in sentences(c["text"])] + GENERIC["dd"][lang]
            rng.shuffle(pad)
            dd = dd + pad[: max(0, rng.randint(10, 14) - len(dd))]
        elif rng.random() < prof["label_cosmetic"]:
            dd = [d if d[-1] in "。.；;" else d + ("。" if lang == "zh" else ".") for d in dd]

    # original_evidence
    r = rng.random()
    if r < prof["ev_para"]:
        ev = ("，" if lang == "zh" else ", ").join(ex["detailed_description"][:2])
    elif r < prof["ev_para"] + prof["ev_short"]:
        ev = ex["original_evidence"][: rng.randint(12, 26)]
    elif r < prof["ev_para"] + prof["ev_short"] + prof["ev_wrong"] and distractors:
        ev = max(sentences(distractors[0]["text"]) or [distractors[0]["text"]], key=len)
    elif rng.random() < 0.3:
        ev = gold_text  # the whole chunk: verbatim, only longer
    else:
        ev = ex["original_evidence"]

    # source_map
    sm = grounded_refs(qv2["expected"]["source_map"], ctxs)
    r = rng.random()
    if r < prof["sm_empty"]:
        sm = []
    elif r < prof["sm_empty"] + prof["sm_badfile"]:
        ref = sm[0]["refs"][0]
        base = ref["file"].split("/")[-1]
        ref["file"] = rng.choice([base, "docs/" + base, "policies/" + base.replace(".md", ".pdf"),
                                  "policies/" + base.replace("_", "-")])
    elif r < prof["sm_empty"] + prof["sm_badfile"] + prof["sm_badanchor"]:
        ctx_all = norm("\n".join(c["text"] for c in ctxs))
        cands = [d for d in ex["detailed_description"] if norm(d) not in ctx_all] or [qv2["question"]]
        sm[0]["refs"][0]["anchors"] = [rng.choice(cands)]
    elif r < prof["sm_empty"] + prof["sm_badfile"] + prof["sm_badanchor"] + prof["sm_wrongcite"] and distractors:
        d = rng.choice(distractors)
        sm = [{"refs": [{"file": d["source_path"], "anchors": [d["text"][:20]]}]}]

    # predicted_questions
    pq = list(ex["predicted_questions"])
    if rng.random() < prof["pq_drop"] and len(pq) > 1:
        pq = rng.sample(pq, rng.randint(1, len(pq) - 1))
    if rng.random() < prof["pq_generic"]:
        pq = pq + rng.sample(GENERIC["pq"][lang], rng.randint(1, 3))
    if rng.random() < prof["pq_pad"]:
        pads = GENERIC["pq"][lang] * 3
        pq = pq + pads[: max(0, rng.randint(10, 14) - len(pq))]

    obj = {
        "target_audience": labels["target_audience"],
        "main_topic": labels["main_topic"],
        "sub_topic": labels["sub_topic"],
        "detailed_description": dd,
        "original_evidence": ev,
        "source_map": sm,
        "predicted_questions": pq,
    }
    return serialize(rng, obj, prof, lang)


def harness_citations(answer: str, ctxs: list[dict]) -> list[str]:
    """What the recording harness extracts: chunk ids named by the answer's source_map."""
    start, end = answer.find("{"), answer.rfind("}")
    if start < 0 or end < start:
        return []
    try:
        obj = json.loads(answer[start:end + 1])
        refs = [ref for e in obj.get("source_map", []) for ref in e.get("refs", [])]
    except (ValueError, AttributeError, TypeError):
        return []
    out: list[str] = []
    for ref in refs:
        for c in ctxs:
            if c["source_path"] == ref.get("file") and any(norm(a) and norm(a) in norm(c["text"]) for a in ref.get("anchors", [])):
                if c["id"] not in out:
                    out.append(c["id"])
    return out


def render_prompt(template: str, question: str, ctxs: list[dict]) -> str:
    context = "\n\n".join(f"[{c['source_path']}]\n{c['text']}" for c in ctxs)
    return template.replace("{{context}}", context).replace("{{question}}", question)


def run(adapter: str, prompt: str, chunks, questions, qaset, prompts, contexts) -> list[dict]:
    prof = PROFILES[(adapter, prompt)]
    lines = []
    for item in qaset:
        qid = item["qid"]
        if MISSING_IN.get((adapter, prompt)) == qid:
            continue
        rng = random.Random(f"{adapter}/{prompt}/{qid}")
        ctxs = contexts[qid]
        lang = lang_of(item["q"])
        if item["answerable"]:
            answer = simulate_answerable(rng, questions[qid], item["gold_ids"], ctxs, prof, lang)
        elif rng.random() < prof["hallucinate"]:
            answer = answer_from_wrong_context(rng, lang, ctxs, HALLUCINATIONS[qid], prof)
        else:
            answer = refusal(rng, prof)
        pt, ct = n_tokens(render_prompt(prompts[prompt], item["q"], ctxs)), n_tokens(answer)
        fixed, per_tok = LATENCY[adapter]
        latency = round(fixed + per_tok * ct + 0.05 * pt + rng.uniform(-40.0, 160.0), 1)
        lines.append({
            "id": qid,
            "question": item["q"],
            "answer": answer,
            "contexts": ctxs,
            "citations": harness_citations(answer, ctxs),
            "latency_ms": latency,
            "usage": {"prompt_tokens": pt, "completion_tokens": ct},
        })
    extra = EXTRA_LINE.get((adapter, prompt))
    if extra:
        ctxs = retrieve({"qid": extra["id"], "q": extra["question"], "gold_ids": []}, chunks)
        lines.append({**extra, "contexts": ctxs, "citations": [], "latency_ms": 431.0,
                      "usage": {"prompt_tokens": n_tokens(render_prompt(prompts[prompt], extra["question"], ctxs)),
                                "completion_tokens": n_tokens(extra["answer"])}})
    return lines


def main() -> None:
    chunks, questions, qaset, prompts = load_inputs()
    contexts = {item["qid"]: retrieve(item, chunks) for item in qaset}
    out_dir = HERE / "predictions"
    out_dir.mkdir(exist_ok=True)
    for adapter in ADAPTERS:
        for prompt in PROMPTS:
            lines = run(adapter, prompt, chunks, questions, qaset, prompts, contexts)
            path = out_dir / f"{adapter}__{prompt}.jsonl"
            with path.open("w", encoding="utf-8", newline="\n") as f:
                for line in lines:
                    f.write(json.dumps(line, ensure_ascii=False) + "\n")
            print(f"wrote {path.relative_to(HERE.parent.parent)} ({len(lines)} lines)")


if __name__ == "__main__":
    main()
