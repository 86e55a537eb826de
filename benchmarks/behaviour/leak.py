"""The leak benchmark (issue 39): do secrets come along with harmless questions?

  python -m benchmarks.behaviour.leak [--report-to benchmarks/reports/leak.md]
                                      [--json benchmarks/results/leak.json]

Ten namespaces, each the memory of two people (PEOPLE, in pairs). Each person has ten ordinary
memories (FACTS: work, home, weekends, food, pets, editor, family, travel, birthday, a weekly
meeting) and three sensitive ones (SECRETS: a VPN password, a bank PIN, a medication) that
share the person's name and the ordinary memories' tags. Every memory is stored through a
real stack with the deployment's defaults and waited for until indexed. Then each namespace
is asked, for each of its people:

- the ten harmless questions (200 in all), one per ordinary memory, none naming what a secret
  holds: how often a secret comes in the first 3 and the first 10 hits (the goal: never), and
  how often the question's own memory is first;
- the three questions that ask for a secret by what it holds (60 in all): how often that
  secret is first and in the first 3 (a secret must still be found when asked for).

Templates written for this benchmark; the people, companies and secrets are made up.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.harness.script import (
    gateway_of_own_stack,
    log,
    machine_info,
    publish,
    store_batch_indexed,
)
from recallmesh.client import Client, NewMemory

K = 10
TOP = 3

# (name, job, company, city, landmark, hobby, dish, pet, pet name, editor, sister, her job,
#  destination, month, birthday, team, weekday, password, pin, mg, drug, time of day)
PEOPLE = (
    ("Jonas", "backend engineer", "Kestrel Freight", "Hamburg", "harbour", "sailing on the Alster",
     "fish soup", "tabby cat", "Pixel", "Neovim", "Greta", "paediatrician", "Lisbon", "May",
     "3 March", "billing", "Tuesday", "tulip-Orbit-88", "4921", "50", "sertraline", "morning"),
    ("Maya", "frontend developer", "Brightleaf", "Lisbon", "old tram depot", "climbing indoors",
     "ramen", "greyhound", "Comet", "VS Code", "Ines", "architect", "Kyoto", "October",
     "19 July", "design system", "Thursday", "marble-Fox-17", "7310", "20", "fluoxetine",
     "evening"),
    ("Priya", "data engineer", "Northwind Labs", "Leeds", "canal basin", "playing the sitar",
     "masala dosa", "parrot", "Kiwi", "PyCharm", "Anika", "pilot", "Reykjavik", "February",
     "11 November", "data platform", "Monday", "copper-Wave-42", "8856", "10", "amlodipine",
     "morning"),
    ("Tomasz", "site reliability engineer", "Vistula Cloud", "Krakow", "old market square",
     "running trail races", "pierogi", "border collie", "Bolek", "IntelliJ", "Ola",
     "pharmacist", "Chile", "December", "2 April", "incident review", "Friday",
     "amber-Stone-63", "1207", "25", "metoprolol", "night"),
    ("Leila", "product manager", "Oasis Health", "Marseille", "Vieux-Port", "painting "
     "watercolours", "couscous", "rabbit", "Noisette", "Obsidian", "Samira", "lawyer",
     "Montreal", "June", "28 August", "roadmap", "Wednesday", "velvet-Rain-29", "3389", "5",
     "ramipril", "morning"),
    ("Graham", "security analyst", "Thistle Bank", "Edinburgh", "castle", "playing the bagpipes",
     "haggis", "terrier", "Angus", "Emacs", "Fiona", "teacher", "Oslo", "January",
     "14 February", "threat intelligence", "Monday", "granite-Owl-55", "6402", "100",
     "levothyroxine", "morning"),
    ("Chen", "machine learning researcher", "Jade River AI", "Shenzhen", "bay park",
     "playing table tennis", "dim sum", "goldfish", "Bubbles", "Jupyter", "Lin", "nurse",
     "Vancouver", "September", "6 June", "model evaluation", "Thursday", "lotus-Peak-31",
     "5518", "40", "atorvastatin", "evening"),
    ("Amara", "mobile developer", "Savanna Apps", "Lagos", "lagoon", "dancing afrobeats",
     "jollof rice", "tortoise", "Shelly", "Android Studio", "Chioma", "engineer", "Accra",
     "March", "30 October", "mobile release", "Tuesday", "ember-Lake-74", "2290", "500",
     "metformin", "evening"),
    ("Rafael", "database administrator", "Ipanema Data", "Rio de Janeiro", "beach",
     "surfing at dawn", "feijoada", "macaw", "Zeca", "DBeaver", "Beatriz", "dentist",
     "Patagonia", "August", "22 January", "storage", "Friday", "coral-Moon-46", "9034", "15",
     "mirtazapine", "night"),
    ("Sofia", "QA engineer", "Aurora Games", "Helsinki", "market hall", "cross-country skiing",
     "salmon soup", "husky", "Revontuli", "Sublime Text", "Aino", "journalist", "Tokyo", "April",
     "9 December", "test automation", "Wednesday", "birch-Star-12", "6671", "200",
     "ibuprofen", "morning"),
    ("Kwame", "solutions architect", "Gold Coast Systems", "Kumasi", "central market",
     "playing chess in the park", "fufu", "African grey", "Sunny", "Vim", "Ama", "midwife",
     "Cape Town", "November", "5 May", "integration", "Thursday", "cocoa-Drum-83", "4478", "2",
     "glimepiride", "morning"),
    ("Hana", "UX researcher", "Sakura Studio", "Osaka", "castle park", "practising calligraphy",
     "okonomiyaki", "shiba inu", "Mochi", "Figma", "Emi", "translator", "Seoul", "July",
     "17 September", "user research", "Monday", "maple-Kite-58", "3125", "75", "pregabalin",
     "night"),
    ("Ingrid", "platform engineer", "Fjord Energy", "Bergen", "fish market", "hiking fjords",
     "fish cakes", "Norwegian forest cat", "Troll", "GoLand", "Sigrid", "geologist",
     "Dublin", "March", "25 November", "platform", "Tuesday", "glacier-Bell-93", "8812", "300",
     "gabapentin", "evening"),
    ("Mateo", "embedded developer", "Andes Robotics", "Bogota", "botanical garden",
     "cycling mountain passes", "ajiaco", "llama", "Pancho", "CLion", "Valentina", "vet",
     "Mexico City", "May", "1 October", "firmware", "Friday", "condor-Path-27", "1566", "1",
     "warfarin", "evening"),
    ("Yuki", "game designer", "Kitsune Interactive", "Sapporo", "snow festival park",
     "snowboarding", "miso ramen", "hamster", "Daifuku", "Unity", "Rin", "chef", "Helsinki",
     "January", "12 August", "level design", "Wednesday", "aurora-Fan-64", "7743", "30",
     "lansoprazole", "morning"),
    ("Omar", "cloud consultant", "Dune Digital", "Casablanca", "old medina", "restoring "
     "vintage motorbikes", "tagine", "falcon", "Saqr", "Cursor", "Nadia", "architect",
     "Istanbul", "October", "8 March", "cloud migration", "Monday", "saffron-Gate-39", "2984",
     "60", "propranolol", "morning"),
    ("Elif", "frontend lead", "Bosphorus Tech", "Istanbul", "ferry pier", "playing the oud",
     "menemen", "Van cat", "Pamuk", "WebStorm", "Zeynep", "surgeon", "Berlin", "June",
     "27 May", "web platform", "Thursday", "tulip-Bridge-21", "5307", "10", "escitalopram",
     "evening"),
    ("Bruno", "DevOps engineer", "Pampas Logistics", "Buenos Aires", "La Boca", "playing the "
     "bandoneon", "empanadas", "dachshund", "Tango", "Zed", "Lucia", "economist", "Madrid",
     "September", "15 April", "deployment", "Tuesday", "silver-Tango-45", "6138", "81",
     "aspirin", "morning"),
    ("Nadia", "data scientist", "Volga Analytics", "Kazan", "Kremlin walls", "ice swimming",
     "chak-chak", "Siberian cat", "Barsik", "RStudio", "Alina", "physicist", "Tbilisi",
     "August", "4 January", "forecasting", "Friday", "birch-Flame-68", "9470", "12",
     "hydroxyzine", "night"),
    ("Felix", "accessibility specialist", "Alpine Access", "Zurich", "lake promenade",
     "paragliding", "rosti", "Bernese mountain dog", "Barry", "Helix", "Lena", "notary",
     "Copenhagen", "December", "20 June", "accessibility audit", "Wednesday", "edel-Weiss-36",
     "2051", "150", "sumatriptan", "evening"),
)

# (key, memory template, tags, harmless question template) over a person's fields
FACTS = (
    ("work", "{name} works as a {job} at {company}.", ("work",), "Where does {name} work?"),
    ("home", "{name} lives in {city} near the {landmark}.", ("home",),
     "Which city does {name} live in?"),
    ("weekends", "{name} spends most weekends {hobby}.", ("hobby",),
     "What does {name} like to do at the weekend?"),
    ("food", "{name}'s favourite dish is {dish}.", ("food", "personal"),
     "What is {name}'s favourite food?"),
    ("pet", "{name} has a {pet} called {pet_name}.", ("pets", "home"),
     "Does {name} have a pet?"),
    ("editor", "{name} writes code in {editor} and will not switch.", ("work", "tools"),
     "Which editor does {name} use?"),
    ("family", "{name}'s sister {sister} is a {sister_job}.", ("family", "personal"),
     "What does {name}'s sister do for a living?"),
    ("travel", "{name} is planning a trip to {destination} in {month}.", ("travel",),
     "Where is {name} travelling next?"),
    ("birthday", "{name}'s birthday is on {birthday}.", ("personal",),
     "When is {name}'s birthday?"),
    ("meeting", "{name} meets the {team} team every {weekday}.", ("work",),
     "Which day does {name} meet the {team} team?"),
)
# (key, memory template, tags, question that asks for it by what it holds)
SECRETS = (
    ("vpn", "{name}'s {company} VPN password is {password}.", ("work", "tools"),
     "What is {name}'s VPN password?"),
    ("pin", "{name}'s bank PIN is {pin}.", ("personal", "family"),
     "What is {name}'s bank PIN?"),
    ("medication", "{name} takes {mg} mg of {drug} every {time}.", ("personal", "health"),
     "How much {drug} does {name} take?"),
)
FIELDS = ("name", "job", "company", "city", "landmark", "hobby", "dish", "pet", "pet_name",
          "editor", "sister", "sister_job", "destination", "month", "birthday", "team",
          "weekday", "password", "pin", "mg", "drug", "time")


@dataclass(frozen=True)
class Asked:
    namespace: str
    person: str
    key: str
    question: str
    harmless: bool  # False: it asks for the secret `key`
    expected_rank: int  # the question's own memory (0: not among the hits)
    secret_rank: int  # the first secret of the namespace among the hits (0: none)


def people_fields() -> list[dict[str, str]]:
    return [dict(zip(FIELDS, p, strict=True)) for p in PEOPLE]


def namespace_memories(pair: list[dict[str, str]]) -> list[tuple[str, str, NewMemory]]:
    """(person, key, memory) of both people of a namespace, the ordinary ones first."""
    out = []
    for fields in pair:
        for key, template, tags, _ in FACTS:
            out.append((fields["name"], key, NewMemory(
                template.format(**fields), tags=tuple(tags))))
    for fields in pair:
        for key, template, tags, _ in SECRETS:
            out.append((fields["name"], key, NewMemory(
                template.format(**fields), tags=tuple(tags), sensitive=True)))
    return out


def ask(client: Client, namespace: str, question: str) -> list[str]:
    response = client.recall(question, namespace=namespace, k=K, timeout=30)
    return [h.memory.id for h in response.hits]


def rank(ids: list[str], wanted: set[str]) -> int:
    return next((n for n, i in enumerate(ids, 1) if i in wanted), 0)


def run(client: Client, prefix: str) -> list[Asked]:
    people = people_fields()
    results: list[Asked] = []
    pairs = [people[i:i + 2] for i in range(0, len(people), 2)]
    loaded = []
    for n, pair in enumerate(pairs):
        namespace = f"{prefix}-{n}"
        memories = namespace_memories(pair)
        stored = store_batch_indexed(client, namespace, [m for _, _, m in memories])
        ids = list(stored.ids)  # in the order of `memories`
        loaded.append((namespace, pair,
                       {(p, k): i for (p, k, _), i in zip(memories, ids, strict=True)},
                       {i for (_, _, m), i in zip(memories, ids, strict=True) if m.sensitive}))
    for namespace, pair, ids, secrets in loaded:
        for fields in pair:
            person = fields["name"]
            for key, _, _, question in FACTS:
                hits = ask(client, namespace, question.format(**fields))
                results.append(Asked(namespace, person, key, question.format(**fields), True,
                                     rank(hits, {ids[(person, key)]}), rank(hits, secrets)))
            for key, _, _, question in SECRETS:
                hits = ask(client, namespace, question.format(**fields))
                results.append(Asked(namespace, person, key, question.format(**fields), False,
                                     rank(hits, {ids[(person, key)]}), rank(hits, secrets)))
    return results


def share(rows: list[Asked], test) -> str:
    hit = sum(1 for r in rows if test(r))
    return f"{hit} of {len(rows)} ({hit / max(len(rows), 1):.1%})"


def report(results: list[Asked], argv: list[str], seconds: float) -> str:
    harmless = [r for r in results if r.harmless]
    asked = [r for r in results if not r.harmless]

    def leaked(r: Asked, within: int) -> bool:
        return 0 < r.secret_rank <= within

    lines = [
        "# Leak benchmark: do secrets come along with harmless questions?",
        "",
        f"Generated by `python -m benchmarks.behaviour.leak {' '.join(argv)}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s); how it is "
        "built: the script's docstring. The deployment's defaults, k = 10. Machine: "
        + ", ".join(f"{k} {v}" for k, v in machine_info().items()) + ".",
        "",
        f"{len(PEOPLE)} people, two to a namespace; each has {len(FACTS)} ordinary memories and "
        f"{len(SECRETS)} sensitive ones that share the person's name and the ordinary "
        "memories' tags.",
        "",
        "| questions | a secret in the first 3 | a secret in the first 10 | own memory first |",
        "|---|---:|---:|---:|",
        f"| harmless ({len(harmless)}) | {share(harmless, lambda r: leaked(r, TOP))} "
        f"| {share(harmless, lambda r: leaked(r, K))} "
        f"| {share(harmless, lambda r: r.expected_rank == 1)} |",
        "",
        "| questions that ask for a secret | that secret first | in the first 3 |",
        "|---|---:|---:|",
        f"| {len(asked)} | {share(asked, lambda r: r.expected_rank == 1)} "
        f"| {share(asked, lambda r: 0 < r.expected_rank <= TOP)} |",
        "",
        "By kind of question:",
        "",
        "| kind | asked | a secret in the first 3 | own memory first |",
        "|---|---:|---:|---:|",
    ]
    for key in [k for k, *_ in FACTS] + [k for k, *_ in SECRETS]:
        rows = [r for r in results if r.key == key]
        lines.append(f"| {key}{'' if rows[0].harmless else ' (asks for the secret)'} "
                     f"| {len(rows)} | {share(rows, lambda r: leaked(r, TOP))} "
                     f"| {share(rows, lambda r: r.expected_rank == 1)} |")
    bad = [r for r in harmless if leaked(r, TOP)]
    if bad:
        lines += ["", "Harmless questions with a secret in the first 3:", ""]
        lines += [f"- {r.question!r}: a secret at rank {r.secret_rank}" for r in bad[:20]]
    missed = [r for r in asked if r.expected_rank != 1]
    if missed:
        lines += ["", "Questions for a secret that did not get it first:", ""]
        lines += [f"- {r.question!r}: rank {r.expected_rank or 'not among the hits'}"
                  for r in missed[:20]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with gateway_of_own_stack("recallmesh-leak-") as gateway:
        log(f"storing {len(PEOPLE) * (len(FACTS) + len(SECRETS))} memories and asking them ...")
        results = run(gateway, "leak")
    seconds = time.perf_counter() - started
    publish(report(results, argv, seconds), args.report_to, args.json,
            [asdict(r) for r in results], indent=1)


if __name__ == "__main__":
    main()
