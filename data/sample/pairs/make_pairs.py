"""Generate the demo's small Chinese question-pair task (LCQMC format).

Writes `train.txt`, `dev.txt` and `test.txt` beside this script, one pair per
line: `text_a<TAB>text_b<TAB>label`. Label 1: the two questions ask the same
thing in different words (paraphrase). Label 0: similar words, different
intent — either another question of the same topic about the same thing
("北京有什么好吃的" / "北京有哪些好玩的地方"), or the same question about a
different thing, worded differently ("北京到上海的高铁要多久" /
"从北京坐高铁去广州需要几个小时").

Deterministic (fixed seed): rerunning reproduces the committed files byte for
byte. Labels are balanced in every split and no sentence pair appears twice
(in either order) across the three files.

Usage: python data/sample/pairs/make_pairs.py [--seed 20240] [--out_dir DIR]
"""
import argparse
import os
import random

SIZES = (("train", 3000), ("dev", 300), ("test", 300))

SLOT_VALUES = {
    "brand": ["华为", "小米", "苹果", "荣耀", "魅族", "联想", "三星", "一加"],
    "bank": ["工商银行", "建设银行", "农业银行", "中国银行", "招商银行", "交通银行",
             "邮政银行", "浦发银行"],
    "city": ["北京", "上海", "广州", "深圳", "成都", "杭州", "西安", "武汉", "南京",
             "重庆", "长沙", "厦门"],
    "subject": ["数学", "英语", "物理", "化学", "历史", "语文", "地理", "生物"],
    "dish": ["红烧肉", "宫保鸡丁", "鱼香肉丝", "麻婆豆腐", "糖醋排骨", "西红柿炒鸡蛋",
             "酸菜鱼", "蛋炒饭", "可乐鸡翅"],
    "symptom": ["感冒", "发烧", "失眠", "头疼", "咳嗽", "胃疼", "过敏", "拉肚子"],
    "app": ["微信", "支付宝", "淘宝", "抖音", "微博", "美团", "京东", "百度网盘"],
    "stain": ["衣服上的油渍", "白鞋上的黄印", "墙上的霉斑", "地毯上的咖啡渍",
              "水壶里的水垢", "裤子上的圆珠笔印"],
}

# (topic, slot names, wordings). Every wording of one intent asks the same
# question; different intents of one topic share the slots but not the meaning.
INTENTS = [
    ("phone", ("brand",), ["{brand}手机屏幕碎了怎么办", "{brand}手机屏摔坏了该怎么处理",
                           "我的{brand}手机屏幕摔碎了怎么修", "{brand}手机的屏幕裂了去哪里修"]),
    ("phone", ("brand",), ["{brand}手机掉电很快怎么回事", "为什么我的{brand}手机耗电这么快",
                           "{brand}手机电量掉得特别快是什么原因", "{brand}手机电池一会儿就没电了"]),
    ("phone", ("brand",), ["{brand}最新款手机多少钱", "{brand}新出的手机卖什么价格",
                           "{brand}的新机售价是多少", "现在买{brand}新款手机要花多少钱"]),
    ("phone", ("brand",), ["{brand}手机怎么截屏", "{brand}手机截图的方法是什么",
                           "在{brand}手机上怎样截图", "{brand}手机如何截取屏幕画面"]),
    ("phone", ("brand",), ["{brand}手机怎么恢复出厂设置", "如何把{brand}手机还原成出厂状态",
                           "{brand}手机恢复出厂的步骤是什么", "{brand}手机怎样重置回出厂设置"]),
    ("phone", ("brand",), ["{brand}手机很卡怎么办", "{brand}手机用久了变慢如何解决",
                           "{brand}手机运行卡顿该怎么处理", "我的{brand}手机越用越卡怎么办"]),
    ("phone", ("brand",), ["{brand}手机丢了怎么找回", "我的{brand}手机丢了能定位找回来吗",
                           "{brand}手机被偷了怎么找", "弄丢的{brand}手机还能找到吗"]),
    ("bank", ("bank",), ["{bank}的银行卡丢了怎么办", "{bank}的卡丢了要怎么挂失",
                         "我把{bank}的卡弄丢了该如何处理", "{bank}银行卡遗失了怎么挂失"]),
    ("bank", ("bank",), ["去{bank}开户需要带什么", "在{bank}办卡要准备哪些材料",
                         "{bank}开卡需要什么证件", "到{bank}开户要带哪些东西"]),
    ("bank", ("bank",), ["{bank}跨行转账收手续费吗", "用{bank}转账到别的银行要手续费吗",
                         "{bank}跨行转账的费用是多少", "{bank}转到其他银行收不收钱"]),
    ("bank", ("bank",), ["{bank}房贷利率是多少", "现在{bank}的房贷利息怎么算",
                         "{bank}办房贷利率多少", "在{bank}贷款买房利息是多少"]),
    ("bank", ("bank",), ["{bank}卡密码忘了怎么办", "忘记了{bank}银行卡密码怎么重置",
                         "{bank}的密码不记得了怎么找回", "{bank}卡的密码想不起来了怎么办"]),
    ("bank", ("bank",), ["{bank}周末上班吗", "{bank}星期六星期天营业吗",
                         "{bank}双休日开门吗", "周末去{bank}能办业务吗"]),
    ("bank", ("bank",), ["{bank}信用卡怎么申请", "如何办理{bank}的信用卡",
                         "申请{bank}信用卡需要什么条件", "想办一张{bank}信用卡怎么弄"]),
    ("travel", ("city", "city2"), ["{city}到{city2}的高铁要多久", "从{city}坐高铁去{city2}需要几个小时",
                                   "{city}去{city2}高铁大概要几个钟头", "坐高铁从{city}到{city2}要多长时间"]),
    ("travel", ("city", "city2"), ["{city}到{city2}的机票多少钱", "从{city}飞{city2}机票价格是多少",
                                   "{city}飞往{city2}的飞机票大概多少钱", "买一张{city}到{city2}的机票要多少钱"]),
    ("city", ("city",), ["{city}有哪些好玩的地方", "去{city}旅游有什么景点推荐",
                         "{city}值得去的景点有哪些", "到{city}玩一定要去哪些地方"]),
    ("city", ("city",), ["{city}现在天气怎么样", "{city}这几天天气如何",
                         "最近{city}的天气好不好", "{city}这周天气冷不冷"]),
    ("city", ("city",), ["{city}有什么好吃的", "{city}有哪些特色小吃",
                         "去{city}必吃的美食有哪些", "{city}的特色美食是什么"]),
    ("city", ("city",), ["{city}住哪里比较方便", "去{city}玩住在哪个区好",
                         "{city}的酒店住哪一带方便", "第一次去{city}住哪里好"]),
    ("city", ("city",), ["{city}的房价是多少", "现在{city}买房一平米多少钱",
                         "{city}的房子贵不贵", "{city}房价每平米大概多少"]),
    ("study", ("subject",), ["{subject}成绩差怎么提高", "怎样才能把{subject}学好",
                             "{subject}怎么学才能提高分数", "{subject}总是考不好怎么办"]),
    ("study", ("subject",), ["学{subject}用什么参考书好", "有什么好的{subject}辅导书推荐",
                             "{subject}的参考资料买哪本好", "推荐几本{subject}的课外辅导书"]),
    ("study", ("subject",), ["{subject}需要请家教吗", "给孩子请{subject}家教有必要吗",
                             "{subject}有没有必要找家教补课", "孩子的{subject}要不要请老师补习"]),
    ("study", ("subject",), ["{subject}考试前怎么复习", "考{subject}之前应该如何复习",
                             "{subject}期末考试怎么准备", "{subject}考前复习有什么方法"]),
    ("study", ("subject",), ["怎么当一名{subject}老师", "想做{subject}老师需要什么条件",
                             "成为{subject}教师要考什么证", "当{subject}老师有什么要求"]),
    ("food", ("dish",), ["{dish}怎么做好吃", "{dish}的家常做法是什么",
                         "如何做出好吃的{dish}", "在家做{dish}有什么窍门"]),
    ("food", ("dish",), ["{dish}热量高吗", "吃{dish}会长胖吗",
                         "{dish}的卡路里多不多", "减肥期间能吃{dish}吗"]),
    ("food", ("dish",), ["做{dish}需要哪些材料", "{dish}要准备什么食材",
                         "{dish}的配料有哪些", "做一份{dish}要买什么菜"]),
    ("citydish", ("city", "dish"), ["{city}哪里的{dish}好吃", "在{city}吃{dish}去哪家店好",
                                    "{city}哪家{dish}最正宗", "{city}有没有好吃的{dish}推荐"]),
    ("citydish", ("city", "dish"), ["{city}的{dish}多少钱一份", "在{city}吃一份{dish}要多少钱",
                                    "{city}饭店里{dish}一般卖多少钱", "{city}点一份{dish}大概什么价"]),
    ("health", ("symptom",), ["{symptom}吃什么药好得快", "{symptom}了应该吃什么药",
                              "治{symptom}用什么药比较好", "{symptom}吃哪种药效果好"]),
    ("health", ("symptom",), ["{symptom}的时候吃什么好", "{symptom}了适合吃哪些东西",
                              "{symptom}期间饮食要注意什么", "{symptom}了不能吃什么"]),
    ("health", ("symptom",), ["{symptom}要去医院看吗", "{symptom}需不需要去医院",
                              "{symptom}严重吗要不要看医生", "{symptom}什么情况下要去医院"]),
    ("health", ("symptom",), ["为什么会{symptom}", "{symptom}是什么原因引起的",
                              "经常{symptom}是怎么回事", "老是{symptom}是什么原因"]),
    ("app", ("app",), ["{app}怎么改密码", "{app}密码如何修改",
                       "怎样更改{app}的登录密码", "{app}的密码在哪里改"]),
    ("app", ("app",), ["{app}账号怎么注销", "如何注销{app}账户",
                       "{app}的账号能彻底删除吗", "不想用{app}了怎么销号"]),
    ("app", ("app",), ["{app}人工客服电话是多少", "怎么联系{app}的人工客服",
                       "{app}的客服怎么找", "{app}有没有人工客服"]),
    ("app", ("app",), ["{app}删除的记录怎么恢复", "{app}里删掉的东西还能找回来吗",
                       "怎么找回{app}误删的记录", "{app}不小心删了记录怎么办"]),
    ("app", ("app",), ["{app}怎么绑定银行卡", "如何在{app}上添加银行卡",
                       "{app}绑卡的步骤是什么", "{app}怎样关联自己的银行卡"]),
    ("howto", ("stain",), ["{stain}怎么去除", "怎样清除{stain}",
                           "{stain}用什么方法能洗掉", "有什么办法去掉{stain}"]),
    ("howto", ("stain",), ["{stain}是怎么形成的", "为什么会有{stain}",
                           "{stain}是什么原因造成的", "{stain}是怎么来的"]),
]


def fill(wording, slots):
    return wording.format(**slots)


def slot_choices(slot_names, rng):
    """A random assignment {slot: value}; city2 never equals city."""
    slots = {}
    for name in slot_names:
        pool = SLOT_VALUES["city" if name == "city2" else name]
        value = rng.choice(pool)
        while name == "city2" and value == slots.get("city"):
            value = rng.choice(pool)
        slots[name] = value
    return slots


def changed_slots(slot_names, slots, rng):
    """The same assignment with one slot moved to another value."""
    name = rng.choice(slot_names)
    pool = SLOT_VALUES["city" if name == "city2" else name]
    other = dict(slots)
    forbidden = {slots[name]} | ({slots["city"]} if name == "city2" else set())
    forbidden |= {slots["city2"]} if name == "city" and "city2" in slots else set()
    other[name] = rng.choice([v for v in pool if v not in forbidden])
    return other


def positive_pair(rng):
    _, slot_names, wordings = rng.choice(INTENTS)
    slots = slot_choices(slot_names, rng)
    first, second = rng.sample(wordings, 2)
    return fill(first, slots), fill(second, slots)


def negative_pair(rng):
    topic, slot_names, wordings = rng.choice(INTENTS)
    slots = slot_choices(slot_names, rng)
    if rng.random() < 0.5:  # another intent of the same topic, same slots
        others = [i for i in INTENTS if i[0] == topic and i[2] is not wordings]
        other_wordings = rng.choice(others)[2]
        return fill(rng.choice(wordings), slots), fill(rng.choice(other_wordings), slots)
    # Same question about another thing, worded differently (as a paraphrase
    # would be), so only the changed city / brand / dish tells them apart.
    other_slots = changed_slots(slot_names, slots, rng)
    first, second = rng.sample(wordings, 2)
    return fill(first, slots), fill(second, other_slots)


def decorate(sentence, rng):
    """Questions in the wild end with '？', '?' or nothing."""
    return sentence + rng.choice(["", "", "？", "？", "?"])


def generate(seed):
    """Returns {split: [(text_a, text_b, label), ...]} with balanced labels."""
    rng = random.Random(seed)
    total = sum(size for _, size in SIZES)
    seen = set()
    pairs = {1: [], 0: []}
    for label, make in ((1, positive_pair), (0, negative_pair)):
        attempts = 0
        while len(pairs[label]) < total // 2:
            attempts += 1
            if attempts > 200 * total:
                raise RuntimeError(f"cannot draw {total // 2} distinct pairs with label {label}; "
                                   "add wordings or slot values")
            a, b = make(rng)
            key = frozenset((a, b))
            if a == b or key in seen:
                continue
            seen.add(key)
            pairs[label].append((decorate(a, rng), decorate(b, rng), label))
    splits, start = {}, 0
    for name, size in SIZES:
        chunk = pairs[1][start // 2:(start + size) // 2] + pairs[0][start // 2:(start + size) // 2]
        rng.shuffle(chunk)
        splits[name] = chunk
        start += size
    return splits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20240)
    parser.add_argument("--out_dir", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()
    for name, rows in generate(args.seed).items():
        path = os.path.join(args.out_dir, f"{name}.txt")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(f"{a}\t{b}\t{label}\n" for a, b, label in rows)
        positives = sum(label for _, _, label in rows)
        print(f"wrote {path}: {len(rows)} pairs ({positives} paraphrase, {len(rows) - positives} not)")


if __name__ == "__main__":
    main()
