"""A few core concepts of attacks, named in many languages, for the model layer.

A phrase list only knows the phrases it lists; a word model only knows the language it was
trained in. What carries across languages is the combination of a few concepts: an *override*
verb aimed at *instructions* from *before*, a *send* verb with *data* nouns and a sink, a note
that wants to stay *forever* and be *restored* when *deleted*. Each concept is a small
multilingual vocabulary of word stems; :func:`concepts` names the concepts a sentence holds, and
the model scores them (and every pair of them) as features next to its words, so a pairing
learned from English attacks also fires on "Ignoriere alle bisherigen Anweisungen" or
"忽略之前的所有指令".

Stems of four or more characters match as prefixes of a word ("anweisung" matches
"Anweisungen"); shorter ones match whole words only. Scripts written without spaces (Chinese,
Japanese, Thai) are searched by substring.
"""

from __future__ import annotations

import functools
import re

from engine.memory.threats.rules import _CONFUSABLES

# concept -> stems (lower case). Whole-word stems shorter than four characters are exact.
# Stems are listed space-separated, one string per concept.
_LEXICON: dict[str, tuple[str, ...]] = {
    k: tuple(v.split())
    for k, v in {
        "addressee": (
            "assistant assistants ai llm llms model models bot bots agent "
            "agents chatbot gpt chatgpt claude copilot gemini cairn ki ia "
            "assistent asistente assistente asystent ассистент ассистента ии ші "
            "модель бот yapay asisten trợ एआई मॉडल مساعد الذكاء 아이 어시스턴트 모델 "
            "인공지능 asystencie intelligenza inteligencia intelligence "
            "inteligência sztuczna künstliche"
        ),
        "override": (
            "ignore ignores ignoring ignored disregard forget override overrid "
            "bypass discard abandon overrule nullif neglect dismiss supersed "
            "ignorier vergiss vergessen missacht übergeh ignora ignorar olvida "
            "olvid ignorez oublie oubliez dimentic esqueç esquece desconsider "
            "negeer vergeet zignoruj ignoruj zapomnij игнорир игнорируй забудь "
            "забуд ігнору yoksay unut abaikan lupakan ignorera glöm bỏ quên "
            "تجاهل انس أهمل अनदेखा भूल 무시 잊어 잊고 nezapomeň přehlíž"
        ),
        "instructions": (
            "instruction instructions rules rule guideline guidelines directive "
            "directives prompt prompts policy policies programming guidance "
            "orders brief preamble setup configuration constraints restrictions "
            "anweisung regeln regel vorgabe richtlinie instrucci reglas regla "
            "indicacion directric consigne règle istruzion regole regola "
            "instruç regras orientaç instructie regels instrukcj polecen zasad "
            "инструкц правил указани промпт інструкц talimat kural instruksi "
            "aturan arahan instruktion regler hướng quy pokyn pravidl تعليمات "
            "قواعد التعليمات निर्देश नियम 지시 규칙 프롬프트 systemprompt systemprompts"
        ),
        "prior": (
            "previous prior earlier above preceding original initial before old "
            "bisherig vorherig früher ursprünglich obige anterior previa previo "
            "précédent preceden originali iniziali eerdere vorige poprzedn "
            "wcześniej предыдущ прежн раньше попередн önceki sebelum tidigare "
            "trước předchozí السابقة سابقا पिछले पहले 이전 기존"
        ),
        "now_on": (
            "henceforth onward onwards forward ab jetzt sofort ahora desde "
            "maintenant désormais ora poi agora vanaf teraz отныне теперь тепер "
            "artık sekarang mulai nu giờ अब الآن 이제부터 이제"
        ),
        "negation": (
            "no without none zero never ohne kein keine niemals sin nunca sans "
            "aucun aucune jamais senza nessun mai sem nenhum zonder geen nooit "
            "bez żadnych nigdy без никогда ніколи olmayan asla tanpa tidak utan "
            "inga aldrig không بلا بدون أبدا बिना कोई 없는 절대 않"
        ),
        "limits": (
            "restriction restrictions limits limit limitations filters filter "
            "censorship ethics morals guardrails safeguards safety moderation "
            "einschränkung grenzen restriccion límites filtros limite limiti "
            "restriç ograniczen ograniczeń ограничен фильтр обмежен sınır "
            "kısıtlama batasan begränsning giới قيود प्रतिबंध सीमा 제한 필터"
        ),
        "identity": (
            "persona personality character role identity mode roleplay rolle "
            "modus persönlichkeit personaje modo papel rôle personnage ruolo "
            "personaggio personagem rola tryb роль режим персонаж mod peran "
            "läge roll vai chế دور وضع भूमिका मोड 역할 모드 dan"
        ),
        "reveal": (
            "reveal print output show display repeat dump leak disclose recite "
            "zeig zeige ausgeben muestra revela mostrar affiche révèle mostra "
            "rivela mostre revele toon pokaż ujawnij покажи выведи раскрой "
            "göster tampilkan visa hiển اعرض أظهر दिखा 출력 보여 공개"
        ),
        "send": (
            "send post upload forward transmit relay mirror exfiltrat leak "
            "beacon sync ship sende schick übermittel envía envia enviar envoie "
            "envoyer transmet invia inviare envie stuur wyślij prześlij отправ "
            "перешли надішли gönder kirim skicka gửi أرسل ارسل भेज 보내 전송"
        ),
        "data": (
            "conversation conversations chat chats history messages message "
            "transcript memories keys key tokens passwords password credentials "
            "secrets cookies env environment clipboard chatverlauf verlauf "
            "schlüssel passwört nachricht conversaci historial claves contraseñ "
            "mensaje historique clés mots cronologia conversazion chiavi "
            "conversa chaves senhas geschiedenis gesprek rozmow historię "
            "historia klucze переписк истори ключи пароли сообщени розмов "
            "sohbet geçmiş anahtar percakapan riwayat kunci konversation "
            "historik nycklar sử trò محادثة المحادثة سجل مفاتيح बातचीत इतिहास "
            "대화 기록 키"
        ),
        "secrecy": (
            "secretly quietly silently covertly heimlich unauffällig secreto "
            "discrètement secrètement nascosto segretamente secretamente "
            "stiekem potajemnie тайно незаметно потихоньку gizlice diam "
            "hemlighet bí سرا سراً चुपके 몰래"
        ),
        "user": (
            "user users human owner operator person nutzer benutzer usuario "
            "utilisateur utente usuário gebruiker użytkownik пользовател "
            "користувач kullanıcı pengguna användare người المستخدم उपयोगकर्ता "
            "사용자"
        ),
        "forever": (
            "forever permanently permanent indefinitely always immer dauerhaft "
            "siempre toujours sempre altijd zawsze навсегда назавжди sonsuza "
            "selamanya alltid mãi للأبد دائما हमेशा 영원히 항상"
        ),
        "restore": (
            "restore re-add readd rewrite reinsert recreate wiederherstell "
            "restaur rétabli ripristin herstel przywróć восстанов віднов geri "
            "pulihkan återställ khôi استعد أعد बहाल 복원 다시"
        ),
        "delete": (
            "delete deleted removed remove cleared wiped erased pruned gelöscht "
            "lösch elimin borra supprim effac cancell verwijder usun удал видал "
            "silin dihapus hapus raderas xóa حذف हटा 삭제"
        ),
        "memory": (
            "memory memories note entry gedächtnis eintrag notiz memoria nota "
            "mémoire память запис пам'ять hafıza memori catatan minne ذاكرة "
            "الذاكرة मेमोरी याद 기억 메모"
        ),
        "obey": (
            "obey follow comply execute befolge gehorche folge obedece sigue "
            "cumple obéis obéir suis exécute obbedisci segui esegui obedeça "
            "siga volg gehoorzaam słuchaj wykonuj подчиняй выполняй следуй "
            "слухай виконуй uy itaat ikuti patuhi följ lyd theo أطع نفذ نفّذ "
            "पालन 따르 따라"
        ),
        "refuse": (
            "refuse refuses decline declines refusals ablehn verweiger niegas "
            "rechaz refuser rifiut recus weiger odmaw отказ відмов reddet "
            "menolak vägra chối ترفض मना 거절 거부"
        ),
        "authority": (
            "command commands admin administrator developer operator owner root "
            "sudo priority befehl orden ordre comando polecenie команд komut "
            "perintah kommando lệnh أمر आदेश 명령"
        ),
    }.items()
}
# Scripts without spaces between words: stems found anywhere in the text.
_UNSPACED: dict[str, tuple[str, ...]] = {
    k: tuple(v.split())
    for k, v in {
        "addressee": ("助手 模型 人工智能 アシスタント モデル ＡＩ ai"),
        "override": ("忽略 无视 無視 忘记 忘掉 忘れ 不要理会 不要遵守"),
        "instructions": ("指令 指示 规则 規則 ルール 提示词 プロンプト 设定"),
        "prior": ("之前 以前 先前 上面 これまで 前の"),
        "now_on": ("从现在 從現在 今から 今後 これから"),
        "negation": ("没有 沒有 不 ない 無し なし 从不"),
        "limits": ("限制 制限 过滤 審査 审查"),
        "identity": ("角色 模式 モード 人格 身份"),
        "reveal": ("输出 显示 表示 出力 透露 公开"),
        "send": ("发送 发给 發送 送信 送って 送る 转发 上传"),
        "data": ("聊天记录 记录 密钥 密码 会話 履歴 パスワード キー 対話"),
        "secrecy": ("悄悄 秘密 偷偷 こっそり 内緒"),
        "user": ("用户 用戶 ユーザー 使用者"),
        "forever": ("永远 永久 永遠 ずっと"),
        "restore": ("重新 恢复 元に戻 復元"),
        "delete": ("删除 刪除 削除"),
        "memory": ("记忆 記憶 メモ 笔记"),
        "obey": ("服从 遵守 听从 従 执行 実行"),
        "refuse": ("拒绝 断り 断ら 拒否"),
        "authority": ("命令 管理员 開発者 开发者"),
    }.items()
}
# Hangul and Arabic words take particles and prefixes ("보내세요", "والتعليمات"): their stems
# are searched as substrings too.
_SUBSTRING_SCRIPT = re.compile("[\uac00-\ud7a3\u0600-\u06ff]")
_UNSPACED_TEXT = re.compile(
    "[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u0e00-\u0e7f\uac00-\ud7a3\u0600-\u06ff]"
)


def _prefix_stem(stem: str) -> bool:
    # Short Latin stems ("note", "post", "show") would match too many unrelated words.
    return len(stem) >= 5 or (len(stem) >= 3 and not stem.isascii())


@functools.cache
def _tables() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]], tuple]:  # type: ignore[type-arg]
    exact: dict[str, set[str]] = {}
    prefix: dict[str, set[str]] = {}
    substring: dict[str, set[str]] = {c: set(v) for c, v in _UNSPACED.items()}
    for concept, stems in _LEXICON.items():
        for raw in stems:
            # The scanner reads a normalised copy of the text in which Cyrillic and Greek
            # look-alikes are folded to Latin ("отправь" -> "oтпpaвь"): stems must be too.
            stem = "".join(_CONFUSABLES.get(c, c) for c in raw).casefold()
            if _SUBSTRING_SCRIPT.search(stem):
                substring.setdefault(concept, set()).add(stem)
                continue
            exact.setdefault(stem, set()).add(concept)
            if _prefix_stem(stem):
                prefix.setdefault(stem, set()).add(concept)
    return (
        {k: frozenset(v) for k, v in exact.items()},
        {k: frozenset(v) for k, v in prefix.items()},
        tuple((c, tuple(sorted(v))) for c, v in substring.items()),
    )


_PREFIX_LENGTHS = (12, 11, 10, 9, 8, 7, 6, 5, 4, 3)


@functools.lru_cache(maxsize=32768)
def _of_token(token: str) -> frozenset[str]:
    exact, prefix, _ = _tables()
    hit = exact.get(token)
    if hit is not None:
        return hit
    n = len(token)
    if n >= 4:
        for length in _PREFIX_LENGTHS:
            if length < n:
                hit = prefix.get(token[:length])
                if hit is not None:
                    return hit
    return _NONE


_NONE: frozenset[str] = frozenset()


def concepts(tokens: list[str], text: str) -> set[str]:
    """The concepts named in a sentence, given its word tokens and its lower-cased text."""
    found: set[str] = set()
    for token in tokens:
        hit = _of_token(token)
        if hit:
            found |= hit
    if not text.isascii() and _UNSPACED_TEXT.search(text) is not None:
        for concept, stems in _tables()[2]:
            if concept not in found and any(s in text for s in stems):
                found.add(concept)
    return found
