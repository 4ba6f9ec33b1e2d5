"""Generate the tiny made-up fine-tuning datasets of the demo and the tests.

Writes, beside this script (see README.md here for what each one is):
  sentiment/{train,dev,test}.tsv   `label<TAB>text_a`, labels pos / neg
  pairs_clue/{train,dev,test}.json CLUE AFQMC-style JSON lines (test: no label, an id)
  nli_clue/{train,dev}.json        OCNLI-style JSON lines, two `-` labels per file
  ner_bio/{train,dev,test}.txt     `char tag` lines, IOB2 tags PER / LOC / ORG
  ner_bmes/{train,dev,test}.txt    the same sentences in BMES
  cluener/{train,dev,test}.json    CLUENER-style JSON lines (test: no label, an id)

Every text is made up from the templates below. Deterministic (fixed seed):
rerunning reproduces the committed files byte for byte; no text appears twice
within a dataset, and every file is small (60 / 20 / 20 rows or sentences).

Usage: python data/sample/tasks/make_samples.py [--seed 20241] [--out_dir DIR]
"""
import argparse
import json
import os
import random
import re

SIZES = (("train", 60), ("dev", 20), ("test", 20))

SENTIMENT_SUBJECTS = ["这家酒店", "房间", "前台服务", "早餐", "这本书", "这台笔记本", "手机电池",
                      "屏幕", "快递", "客服", "键盘", "床"]
SENTIMENT_TEMPLATES = {
    "pos": ["{s}很好，下次还会再来。", "{s}真好，非常满意。", "{s}挺好的，值得推荐。",
            "总体来说{s}很好，很喜欢。", "{s}好极了，物超所值。", "朋友说{s}好，果然没错。"],
    "neg": ["{s}太差了，非常失望。", "{s}很差，不会再来了。", "{s}质量差，已经退货。",
            "总体来说{s}很差，后悔了。", "{s}差劲透了，给个差评。", "朋友说{s}差，果然没错。"],
}

# AFQMC-like: each intent is a list of wordings of one question.
PAIR_INTENTS = [
    ["花呗怎么还款", "花呗的钱如何还", "怎样还花呗的欠款"],
    ["花呗额度怎么提升", "如何提高花呗额度", "花呗额度能调高吗"],
    ["花呗逾期了会怎样", "花呗晚还几天有什么后果", "花呗没按时还款会怎么样"],
    ["借呗可以提前还款吗", "借呗能不能提前还清", "借呗提前还钱可以吗"],
    ["借呗的利息怎么算", "借呗利息是多少", "借呗借钱要付多少利息"],
    ["借呗为什么关闭了", "我的借呗怎么不能用了", "借呗入口突然没有了"],
    ["余额宝的钱怎么转出", "如何把余额宝里的钱取出来", "余额宝转出到银行卡怎么操作"],
    ["余额宝收益怎么计算", "余额宝每天收益是怎么算的", "余额宝的利息如何计算"],
    ["支付密码忘了怎么办", "忘记支付密码如何找回", "支付密码想不起来了怎么重置"],
    ["怎么绑定新的银行卡", "如何添加一张银行卡", "新银行卡在哪里绑定"],
]
PAIR_ENDINGS = ["", "", "？", "?"]

NLI_NAMES = ["小明", "李老师", "王阿姨", "张师傅", "小红", "陈经理", "刘医生", "赵同学"]
NLI_PLACES = ["书店", "超市", "菜市场", "商场", "图书馆", "公园"]
NLI_OBJECTS = {"书店": ("本", "书"), "超市": ("盒", "牛奶"), "菜市场": ("把", "青菜"),
               "商场": ("件", "衣服"), "图书馆": ("本", "杂志"), "公园": ("个", "风筝")}
NLI_HYPOTHESES = {
    "entailment": ["{name}去过{place}。", "{name}得到了一些{obj}。"],
    "neutral": ["{name}是一个人去的{place}。", "{name}很喜欢{obj}。"],
    "contradiction": ["{name}昨天一整天都待在家里。", "{name}从来没去过{place}。"],
}

NER_VALUES = {
    "PER": ["张伟明", "李晓红", "王建国", "赵丽", "陈思远", "刘洋", "周敏", "孙志强"],
    "LOC": ["北京", "上海", "杭州", "成都", "武汉", "西湖", "长江", "沪", "京"],
    "ORG": ["清华大学", "新华社", "中国银行", "红星机械厂", "市人民医院", "蓝天科技公司"],
}
NER_TEMPLATES = [
    "{PER}昨天去了{LOC}。", "{PER}在{ORG}工作了三年。", "{ORG}总部位于{LOC}。",
    "{PER}和{PER2}一起到{LOC}旅游。", "记者从{ORG}获悉，{PER}将于下月访问{LOC}。",
    "{LOC}的{ORG}今天召开会议。", "来自{LOC}的{PER}获得了冠军。", "{PER}说{LOC}的冬天很冷。",
]
NER_PLAIN = ["今天的天气很好。", "我们明天早上八点出发。", "这道题的答案是四十二。"]

CLUENER_VALUES = {
    "name": ["林小雨", "郭大海", "何静", "马文涛", "高晓燕", "罗刚"],
    "address": ["南京路", "中关村", "西湖区", "浦东新区", "天河区"],
    "company": ["星河电子", "青禾食品公司", "远航物流", "金叶茶业"],
    "organization": ["市足球协会", "红十字会", "校学生会", "青年志愿者协会"],
    "position": ["总经理", "工程师", "主任", "教练"],
}
CLUENER_TEMPLATES = [
    "{name}是{company}的{position}。", "{organization}在{address}举办了义卖活动。",
    "{name}在{address}遇见了{name2}。", "{company}的{position}{name}表示很满意。",
    "{name}说，{name}明天会去{address}。", "{organization}邀请{name}担任{position}。",
]

_SLOT = re.compile(r"\{(\w+)\}")


def fill(template, values, rng):
    """Fills a template's {SLOT}s (SLOT2 = another value of SLOT's type).

    Returns (text, [(type, start, end_exclusive)]).
    """
    chosen, text, spans = {}, "", []
    for index, piece in enumerate(_SLOT.split(template)):
        if index % 2 == 0:
            text += piece
            continue
        entity_type = piece.rstrip("0123456789")
        if piece not in chosen:
            taken = {v for k, v in chosen.items() if k.rstrip("0123456789") == entity_type}
            chosen[piece] = rng.choice([v for v in values[entity_type] if v not in taken])
        spans.append((entity_type, len(text), len(text) + len(chosen[piece])))
        text += chosen[piece]
    return text, spans


def distinct(make, count, rng):
    """`count` results of make(rng) whose first element (the text) differs."""
    seen, results = set(), []
    for _ in range(200 * count):
        result = make(rng)
        if result[0] not in seen:
            seen.add(result[0])
            results.append(result)
            if len(results) == count:
                return results
    raise RuntimeError(f"cannot draw {count} distinct texts; add templates or values")


def split(rows):
    """Cuts a list into the SIZES splits, in order."""
    splits, start = {}, 0
    for name, size in SIZES:
        splits[name] = rows[start:start + size]
        start += size
    return splits


def balanced(groups, rng):
    """The SIZES splits, each taking an equal share of every label group, shuffled."""
    splits, start = {}, 0
    for name, size in SIZES:
        share = size // len(groups)
        rows = [row for group in groups for row in group[start:start + share]]
        rng.shuffle(rows)
        splits[name] = rows
        start += share
    return splits


def sentiment(rng):
    groups = []
    for label in ("pos", "neg"):
        templates = SENTIMENT_TEMPLATES[label]
        rows = distinct(lambda r: (r.choice(templates).format(s=r.choice(SENTIMENT_SUBJECTS)),),
                        50, rng)
        groups.append([(label, text) for (text,) in rows])
    return {f"sentiment/{name}.tsv": "label\ttext_a\n" + "".join(f"{label}\t{text}\n"
                                                                  for label, text in rows)
            for name, rows in balanced(groups, rng).items()}


def question(wording, rng):
    return wording + rng.choice(PAIR_ENDINGS)


def pairs_clue(rng):
    def positive(r):
        a, b = r.sample(r.choice(PAIR_INTENTS), 2)
        return a + "|" + b, a, b

    def negative(r):
        first, second = r.sample(PAIR_INTENTS, 2)
        a, b = r.choice(first), r.choice(second)
        return a + "|" + b, a, b
    groups = [[(question(a, rng), question(b, rng), label) for _, a, b in distinct(make, 50, rng)]
              for label, make in (("1", positive), ("0", negative))]
    files = {}
    for name, rows in balanced(groups, rng).items():
        lines = []
        for index, (a, b, label) in enumerate(rows):
            record = {"sentence1": a, "sentence2": b, "label": label}
            if name == "test":  # CLUE test files: an id and no label
                record = {"id": index, "sentence1": a, "sentence2": b}
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        files[f"pairs_clue/{name}.json"] = "".join(lines)
    return files


def nli_clue(rng):
    def example(r):
        name, place = r.choice(NLI_NAMES), r.choice(NLI_PLACES)
        measure, obj = NLI_OBJECTS[place]
        premise = f"{name}昨天下午去{place}买了{r.choice('两三四五')}{measure}{obj}。"
        label = r.choice(sorted(NLI_HYPOTHESES))
        hypothesis = r.choice(NLI_HYPOTHESES[label]).format(name=name, place=place, obj=obj)
        return premise + hypothesis, premise, hypothesis, label
    rows = distinct(example, 80, rng)
    files = {}
    for name, start, size in (("train", 0, 60), ("dev", 60, 20)):
        lines = []
        for index, (_, premise, hypothesis, label) in enumerate(rows[start:start + size]):
            if index in (3, 11):  # annotators disagreed: OCNLI writes "-"
                label = "-"
            record = {"sentence1": premise, "sentence2": hypothesis, "label": label,
                      "genre": "made_up", "id": start + index}
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        files[f"nli_clue/{name}.json"] = "".join(lines)
    return files


def tags(text, spans, scheme):
    """Per-character tags of `text` in "bio" (IOB2) or "bmes"."""
    result = ["O"] * len(text)
    for entity_type, start, end in spans:
        for position in range(start, end):
            if scheme == "bio":
                prefix = "B" if position == start else "I"
            elif end - start == 1:
                prefix = "S"
            else:
                prefix = "B" if position == start else "E" if position == end - 1 else "M"
            result[position] = f"{prefix}-{entity_type}"
    return result


def ner(rng):
    def sentence(r):
        if r.random() < 0.05:
            return r.choice(NER_PLAIN), []
        return fill(r.choice(NER_TEMPLATES), NER_VALUES, r)
    sentences = split(distinct(sentence, 100, rng))
    files = {}
    for scheme in ("bio", "bmes"):
        for name, rows in sentences.items():
            blocks = ["".join(f"{char} {tag}\n"
                              for char, tag in zip(text, tags(text, spans, scheme)))
                      for text, spans in rows]
            files[f"ner_{scheme}/{name}.txt"] = "\n".join(blocks)
    return files


def cluener(rng):
    rows = split(distinct(lambda r: fill(r.choice(CLUENER_TEMPLATES), CLUENER_VALUES, r),
                          100, rng))
    files = {}
    for name, examples in rows.items():
        lines = []
        for index, (text, spans) in enumerate(examples):
            if name == "test":  # CLUENER test files: an id and no label
                record = {"id": index, "text": text}
            else:
                label = {}
                for entity_type, start, end in spans:
                    mention = label.setdefault(entity_type, {}).setdefault(text[start:end], [])
                    mention.append([start, end - 1])  # CLUENER ends are inclusive
                record = {"text": text, "label": label}
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        files[f"cluener/{name}.json"] = "".join(lines)
    return files


def generate(seed):
    """{relative path: file content} of every dataset; one seeded generator per dataset."""
    files = {}
    for offset, make in enumerate((sentiment, pairs_clue, nli_clue, ner, cluener)):
        files.update(make(random.Random(seed * 10 + offset)))
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20241)
    parser.add_argument("--out_dir", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    for relative, content in sorted(generate(args.seed).items()):
        path = os.path.join(args.out_dir, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(content)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
