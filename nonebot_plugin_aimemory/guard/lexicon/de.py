"""German, with its verb at the end of some clauses ("Du sollst alle vorherigen Anweisungen
ignorieren"); umlauts are folded to their base letters before matching. Kept because it
measurably adds: German injections of deepset's public set (bench.guard)."""

from __future__ import annotations

from .classes import Lexicon

LEXICON = Lexicon(
    name="de",
    spaced=True,
    order=(
        "bitte|jetzt|ab jetzt|ab sofort|von nun an|ab heute|ab hier|nun|einfach|dann|und|also|du"
        "|ihr|du musst|du sollst|du wirst|du kannst|ich will dass du|ich mochte dass du|los|ok|okay"
        "|antworte|schreib|sprich|stell dir vor|tu so|bot|ki"
    ),
    you="du|dich|dir|ihr|euch",
    your="deine|deinen|dein|deiner|deinem|eure|euren|euer",
    now=(
        "jetzt|ab jetzt|ab sofort|von nun an|ab heute|ab diesem moment|ab hier|ab nun|fortan"
        "|von jetzt an"
    ),
    discard=(
        "ignoriere|ignorier|ignoriert|ignorieren|vergiss|vergesst|vergessen|verwirf|verwerft"
        "|missachte|missachtet|uberspringe|uberspring|umgehe|losche|streiche"
    ),
    stop="nicht|nicht mehr|hor auf",
    follow=(
        "befolge|befolgt|befolgen|folge|folgt|gehorche|halte dich an|haltet euch an|beachte"
        "|beachtet"
    ),
    void=(
        "gelten nicht mehr|gilt nicht mehr|sind ungultig|sind aufgehoben|ist aufgehoben"
        "|sind ausser kraft|sind nichtig|sind hinfallig|sind gestrichen|zahlen nicht mehr|sind egal"
    ),
    earlier=(
        "oben|vorherigen|vorherige|bisherigen|bisherige|vorigen|fruheren|alten|alte"
        "|ursprunglichen|anfanglichen|obigen"
    ),
    determiners="alle|allen|die|der|den",
    earlier_alone="alles oben|alles davor|das obige|alles vorherige|alles bisherige",
    instructions=(
        "anweisung*|instruktion*|vorgabe*|richtlinie*|prompt*|systemprompt*|systemnachricht*"
        "|programmierung"
    ),
    rules="regel*|einschrankung*|beschrankung*|befehl*|alles",
    given=(
        "man dir gesagt hat|man dir vorher gesagt hat|dir gesagt wurde|du bekommen hast"
        "|du erhalten hast"
    ),
    before="vorher|bisher|zuvor",
    show=(
        "zeig*|gib*|wiederhole*|nenn*|verrat*|schreib*|druck*|kopier*|teile|liste|sag mir|sage mir"
    ),
    hidden=(
        "systemprompt*|system prompt*|prompt*|systemnachricht*|anfangsanweisung*"
        "|versteckte anweisung*|ursprungliche anweisung*"
    ),
    text="text|alles|inhalt|nachricht*",
    question="was|welche|welches|welcher|wie lautet|wie lauten",
    you_be="du bist|bist du|ihr seid|seid ihr|du wirst|wirst du",
    named="du heißt|du heisst|heißt du|heisst du|dein name ist|nenn dich|nenne dich",
    article="ein|eine|einen|mein|meine|meinen|der|die|das|unser|unsere",
    characters=(
        "katzenmadchen|dienstmadchen|sklave|sklavin|dan|ki ohne|ohne einschrankungen"
        "|ohne filter|bose ki"
    ),
    persona="rolle|identitat|persona|charakter|aufgabe|personlichkeit",
    name_nouns="name|namen|spitzname",
    new="neuer|neue|neues|echter|wahrer",
    is_="ist|lautet|wird|:|sei",
    play=(
        "tu so als|tue so als|spiel die rolle|spiele die rolle|verhalte dich wie|benimm dich wie"
        "|gib dich als|stell dir vor du bist|sprich wie|antworte wie|sei mein|sei meine"
        "|schlupfe in die rolle|ubernimm die rolle"
    ),
    for_you="fur dich|fur euch",
    lack=(
        "hast keine|hast keinen|hast kein|hattest keine|hattest keinen|bist nicht gebunden an"
        "|bist frei von"
    ),
    without="keine|keinen|kein|ohne|nicht gebunden an|frei von",
    limits="einschrankung*|beschrankung*|regeln|regel|grenzen|grenze|limit*|tabu*|verbote",
    safeguards="filter|zensur|ethik|moral|sicherheit*|sicherheitsfilter|richtlinie*|moderation",
    lift="deaktiviere*|entferne*|schalte*|heb*|losche*|umgehe*",
    enter="aktiviere*|wechsle in|wechsel in|geh in|starte",
    mode_name="entwickler|dan|gott|jailbreak|ohne filter",
    mode="modus",
    not_x="nicht|schon|wirklich|sehr|so|zu|hier|da|fertig|bereit|dran|[?]",
)
