"""Redaction of personal data in English and Japanese turns, before anything is stored."""

from collections import Counter

import pytest

from fmquality.language.pii.common import luhn_valid
from fmquality.production.redact import Redactor, order_key_from_environment
from fmquality.domain.errors import RedactionKeyMissing

R = Redactor("unit-test-key")


@pytest.mark.parametrize("text, secret, kind", [
    ("Mail me at jane.doe+manga@example.co.jp please", "jane.doe+manga@example.co.jp", "email"),
    ("連絡先はtaro＠example.jpです", "taro＠example.jp", "email"),
    ("call (555) 123-4567 tonight", "(555) 123-4567", "phone"),
    ("call 555-123-4567 tonight", "555-123-4567", "phone"),
    ("or +1 415 555 0100", "+1 415 555 0100", "phone"),
    ("国際 +81 90-1234-5678 まで", "+81 90-1234-5678", "phone"),
    ("電話は03-1234-5678です", "03-1234-5678", "phone"),
    ("携帯09012345678に", "09012345678", "phone"),
    ("電話は０９０－１２３４－５６７８です", "０９０－１２３４－５６７８", "phone"),
    ("My card is 4111 1111 1111 1111.", "4111 1111 1111 1111", "card"),
    ("カード番号は４１１１－１１１１－１１１１－１１１１です", "４１１１－１１１１－１１１１－１１１１", "card"),
    ("Amex 378282246310005 ok", "378282246310005", "card"),
    ("Ship to 1234 Elm Street, Apt 5B, Springfield, IL 62704 please", "1234 Elm Street", "address"),
    ("送り先は東京都渋谷区渋谷2丁目21番1号です", "渋谷2丁目21番1号", "address"),
    ("住所は大阪府大阪市北区梅田1-2-3です", "梅田1-2-3", "address"),
    ("横浜市中区山下町123番地に住んでいます", "山下町123番地", "address"),
    ("〒150-0002 にお願いします", "150-0002", "postal_code"),
])
def test_personal_data_is_replaced(text, secret, kind):
    counts = Counter()
    out = R.redact_text(text, counts)
    assert secret not in out
    assert counts[kind] >= 1, (out, counts)


@pytest.mark.parametrize("text", [
    "Uzumaki is $22.99 and has 3 volumes; ships 2026-11-23.",
    "ISBN 9781421561325 and ISBN 978-4-08-882731-1",
    "送料は¥3,000以上のご注文で無料です。第12巻は¥528です。",
    "Card 4111 1111 1111 1112 fails Luhn",
])
def test_ordinary_text_is_left_alone(text):
    assert R.redact_text(text) == text


def test_order_ids_become_stable_keyed_tokens():
    a = R.redact_text("where is order MAQ7K29XB?")
    b = R.redact_text("注文番号MAQ7K29XBの配送状況は？")
    token = R.order_token("MAQ7K29XB")
    assert "MAQ7K29XB" not in a + b and token in a and token in b
    assert Redactor("another key").order_token("MAQ7K29XB") != token
    assert R.order_token("MAR4T8WPZ") != token


def test_second_pass_changes_nothing():
    text = "me@example.com, 555-123-4567, MAQ7K29XB, 〒150-0002 東京都渋谷区渋谷2丁目21番1号, 4111111111111111"
    once = R.redact_text(text)
    assert R.redact_text(once) == once


def test_turn_fields_including_page_context_order_id():
    turn = {"query": "my email is a@b.co", "response": "Your order MAQ7K29XB ships soon",
            "conversation_history": [{"role": "user", "content": "call 090-1234-5678"}],
            "page_context": {"order": {"order_id": "any-format-123", "status": "shipped"}},
            "retrieved_chunks": ["policy text"], "catalog": [{"asin": "B0X", "title": "T", "price": 1}]}
    out, counts = R.redact_turn(turn)
    assert "a@b.co" not in out["query"] and "090-1234-5678" not in out["conversation_history"][0]["content"]
    assert out["page_context"]["order"]["order_id"] == R.order_token("any-format-123")
    assert counts == Counter({"email": 1, "order_id": 2, "phone": 1})


def test_luhn():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")


def test_key_from_secrets_manager_or_env():
    import boto3
    from moto import mock_aws

    assert order_key_from_environment({"FMQ_ORDER_HASH_KEY": "k"}) == b"k"
    with pytest.raises(RedactionKeyMissing):
        order_key_from_environment({})
    with mock_aws():
        client = boto3.client("secretsmanager")
        arn = client.create_secret(Name="order-key", SecretString="s3cret")["ARN"]
        assert order_key_from_environment({"ORDER_HASH_SECRET_ID": arn}, client) == b"s3cret"
