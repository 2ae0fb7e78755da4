"""A three-title shonen catalog snapshot shared by the consistency and fluency tests."""

CATALOG = [
    {"asin": "B0OP000001", "title": "One Piece, Vol. 1", "price": 9.99, "availability": "in_stock",
     "title_ja": "ワンピース 1", "title_romaji": "Wan Pīsu"},
    {"asin": "B0JK000001", "title": "Jujutsu Kaisen, Vol. 1", "price": 9.99, "availability": "in_stock",
     "title_ja": "呪術廻戦 1", "title_romaji": "Jujutsu Kaisen"},
    {"asin": "B0DS000001", "title": "Demon Slayer: Kimetsu no Yaiba, Vol. 1", "price": 9.99,
     "availability": "out_of_stock", "title_ja": "鬼滅の刃 1", "title_romaji": "Kimetsu no Yaiba"},
]
