"""Names of people: a Japanese name before 様/さま/さん/くん/君/ちゃん/殿/氏 (kanji 2-8 or katakana, role words
such as 担当者様, お客様, 配達員さん and compounds such as 仕様 excluded), after 名前は/氏名/名義は, before
と申します; a full name without honorific (a common surname + 1-3 kanji, "山田花子") only in text about
the shopper's own delivery, booking or identity (住所, 〒, 電話, 予約, 名義, 返品 ...) or holding other
personal data, so an author named in an answer (伊藤潤二) stays; an English name after
Mr/Mrs/Ms/Miss/Mx/Dr/Prof or "my name is"; a common Japanese surname in romaji before
-san/-sama/-kun/-chan ("Yamada-san"; "Kaguya-sama" is a title). The honorific stays
(``[NAME]様``). Titles such as "Dr. Stone", and any phrase passed as ``protect`` (the turn's catalog
and page titles), are not names. A bare English name ("Jane Doe" alone) is not detected.
"""

from __future__ import annotations

import re

from fmquality.language.pii.common import Claim, normalize_width

_KANJI = r"[一-龯々〆]"
_HONORIFIC = r"(?:様|さま|さん|くん|君|ちゃん|殿|氏)"
_HONORIFIC_AT = re.compile(_HONORIFIC)
_JA_KANJI_NAME = re.compile(rf"(?<![一-龯々〆])({_KANJI}{{2,8}}(?:[ ]{_KANJI}{{1,4}})?)(?={_HONORIFIC})")
_JA_KATAKANA_NAME = re.compile(rf"(?<![ァ-ヶー・])([ァ-ヶ][ァ-ヶー]{{1,9}}(?:・[ァ-ヶ][ァ-ヶー]{{1,9}})?)(?={_HONORIFIC})")
_JA_NAME_AFTER_WORD = re.compile(rf"(?:名前は|名前[:]|氏名[:は]?|名義は)\s*((?:{_KANJI}|[ァ-ヶー]){{2,8}}"
                                 rf"(?:[ ](?:{_KANJI}|[ァ-ヶー]){{1,6}})?)")
# A full name written without an honorific ("山田花子、〒150-0002 ..."): one of the most common
# two-kanji (or longer) surnames, then a given name of 1-3 kanji, the whole kanji run and nothing more.
# A bare surname ("佐藤です") is left alone; so are places and institutions (中村区, 松本市, 中野駅).
_COMMON_SURNAMES = (
    "佐藤 鈴木 高橋 田中 伊藤 渡辺 渡邊 山本 中村 小林 加藤 吉田 山田 佐々木 山口 松本 井上 木村 斎藤 斉藤 清水 山崎 池田 橋本 "
    "阿部 石川 山下 中島 石井 小川 前田 岡田 長谷川 藤田 後藤 近藤 村上 遠藤 青木 坂本 福田 太田 西村 藤井 金子 岡本 藤原 "
    "中野 三浦 原田 中川 松田 竹内 小野 田村 中山 和田 石田 森田 上田 柴田 酒井 工藤 横山 宮崎 宮本 内田 高木 安藤 島田 "
    "谷口 大野 高田 丸山 今井 河野 藤本 村田 武田 上野 杉山 増田 小山 大塚 平野 菅原 久保 松井 千葉 岩崎 桜井 木下 野口 "
    "松尾 菊地 野村 新井 渡部").split()
_JA_BARE_NAME = re.compile(rf"(?<![一-龯々〆])((?:{'|'.join(sorted(_COMMON_SURNAMES, key=len, reverse=True))})"
                           rf"[ ]?{_KANJI}{{1,3}})(?![一-龯々〆])")
_NOT_GIVEN_NAME_ENDINGS = tuple("区市町村郡県都府道駅店社様殿氏君家屋所館園線口港寺院橋川山通条目号番地街台島岡谷沢野原田池湖海浜"
                                "坂丘森林宮神堂城校塾科部課署局庁庫場側方面産製版巻話編")
_JA_NAME_BEFORE_INTRO = re.compile(rf"(?<![一-龯々〆])({_KANJI}{{2,6}})(?=と申します|と言います|といいます)")
_EN_TITLE_NAME = re.compile(r"(?<![A-Za-z])(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof)\.?[ \t]+([A-Z][a-z'’-]+(?:[ \t]+[A-Z][a-z'’-]+)?)")
_EN_NAME_AFTER_WORD = re.compile(r"(?<![A-Za-z])(?i:my\s+name\s+is|my\s+name's|name\s*:)\s+"
                                 r"([A-Z][a-z'’-]+(?:\s+[A-Z][a-z'’-]+){0,2})")
_ROMAJI_HONORIFIC = re.compile(r"(?<![A-Za-z])([A-Z][a-z]+)[- ](?i:san|sama|kun|chan|dono)(?![A-Za-z])")
# Romanized honorifics only after a common surname: "Yamada-san" is a person, "Kaguya-sama" and
# "Mieruko-chan" are titles.
_ROMAJI_SURNAMES = frozenset(
    "sato suzuki takahashi tanaka ito watanabe yamamoto nakamura kobayashi kato yoshida yamada sasaki yamaguchi "
    "matsumoto inoue kimura saito shimizu yamazaki ikeda hashimoto abe ishikawa yamashita nakajima ishii ogawa maeda "
    "okada hasegawa fujita goto kondo murakami endo aoki sakamoto fukuda ota ohta nishimura fujii kaneko okamoto "
    "fujiwara nakano miura harada nakagawa matsuda takeuchi ono tamura nakayama wada ishida morita ueda shibata sakai "
    "kudo yokoyama miyazaki miyamoto uchida takagi ando shimada taniguchi ohno ono takada maruyama imai kono fujimoto "
    "murata takeda ueno sugiyama masuda koyama otsuka hirano sugawara kubo matsui chiba iwasaki sakurai kinoshita "
    "noguchi matsuo kikuchi nomura arai mori hayashi hara".split())
# A bare full name is only taken where the text is about the shopper's own delivery, booking or identity.
_PERSONAL_CONTEXT = re.compile(r"住所|〒|電話|メール|予約|受取|受け取|名義|宛|届け先|送り先|配送先|お届け先|返品|注文者|購入者|"
                               r"本人|会員|申込|申し込|領収書|請求書")
# Runs ending in a role or relation word are not names (担当者様, 配達員さん, 店長さん, 息子さん, 王子様).
_NOT_NAME_ENDINGS = ("者", "員", "長", "屋", "社", "店", "局", "署", "師", "士", "族", "方", "達", "手", "王", "嬢", "姫",
                     "神", "家", "主人", "友人", "本人", "恋人", "管理人", "職人", "住人", "知人", "他人", "大人", "婦人",
                     "夫人", "新人", "名人", "商人", "老人", "隣人", "息子", "王子", "女神", "天使", "皇子", "彼女", "彼氏",
                     "旦那", "親父", "叔父", "叔母", "伯父", "伯母", "祖父", "祖母", "両親", "親戚", "先輩", "後輩", "同僚",
                     "上司", "部下", "先方", "相手", "得意", "各位", "先生", "兄", "姉", "弟", "妹", "娘", "孫", "客")
# 〜様 compounds that are not honorifics (仕様, 模様, 同様, 多様, 一様, 異様, 有様, 両様, 文様, 紋様).
_SAMA_COMPOUND_FIRST = frozenset("仕模同多一異有両文紋図")
_NOT_KATAKANA_NAMES = frozenset(
    "スタッフ ドライバー メーカー ショップ ユーザー オーナー ゲスト メンバー カスタマー サポート センター オペレーター ファン ママ "
    "パパ キャラ ヒロイン ヒーロー プレミアム クリエイター イラストレーター ライター デザイナー アシスタント マネージャー チーム "
    "ストア ヤマト サガワ クロネコ サンタ".split())
_TITLE_NAMES = ("dr stone", "dr slump", "dr mashirito", "mr osomatsu", "mr villain", "mr fullswing", "miss kobayashi",
                "mr bean", "dr house", "mr children")


def names_in(norm: str, claim: Claim, protect: list[str], personal: bool) -> None:
    """Names (see the module docstring); ``personal``: other personal data was found in the text."""
    protected = [(m.start(), m.end()) for p in protect for m in re.finditer(re.escape(normalize_width(p)), norm)]

    def take(start: int, end: int) -> None:
        if not any(s <= start and end <= e for s, e in protected):
            claim(start, end, "name")

    for m in _JA_KANJI_NAME.finditer(norm):
        run = m.group(1).replace(" ", "")
        honorific = _HONORIFIC_AT.match(norm, m.end(1)).group()
        after = norm[m.end(1) + len(honorific):][:1]
        if run.endswith(_NOT_NAME_ENDINGS):
            continue
        if honorific[0] == "様" and (run[-1] in _SAMA_COMPOUND_FIRST or after in ("々", "式", "子")):
            continue
        if honorific[0] == "氏" and after in ("名", "族"):
            continue
        if honorific[0] == "殿" and (after in ("堂", "下") or run[-1] in "御宮神貴湯本"):
            continue
        take(*m.span(1))
    if personal or _PERSONAL_CONTEXT.search(norm):
        for m in _JA_BARE_NAME.finditer(norm):
            if not m.group(1).endswith(_NOT_GIVEN_NAME_ENDINGS):
                take(*m.span(1))
    for m in _JA_KATAKANA_NAME.finditer(norm):
        if m.group(1) not in _NOT_KATAKANA_NAMES:
            take(*m.span(1))
    for pattern in (_JA_NAME_AFTER_WORD, _JA_NAME_BEFORE_INTRO, _EN_NAME_AFTER_WORD):
        for m in pattern.finditer(norm):
            take(*m.span(1))
    for m in _ROMAJI_HONORIFIC.finditer(norm):
        if m.group(1).lower() in _ROMAJI_SURNAMES:
            take(*m.span(1))
    for m in _EN_TITLE_NAME.finditer(norm):
        said = re.sub(r"[.\s]+", " ", m.group().lower()).strip()
        if not any(said.startswith(t) for t in _TITLE_NAMES):
            take(*m.span(1))
