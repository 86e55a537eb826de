"""The behaviour suite's cases: what an agent's developer checks of a memory service (issue 27).

Each case is a small namespace of its own. Its memories are stored one at a time, in order,
between `FILLERS` unrelated one-line memories (the first half before them, the second half
after), then one recall with the case's query; the case passes when its expected memory is
at rank 1 or, where `within` says so, in the top 3, and none of its `absent` memories (a secret
the question does not ask for) is among the first ABSENT_WITHIN hits, and no content comes
twice among them. A case whose `expect` is None asks what nothing stored answers: it passes
when the answer is empty (nothing clears the deployment's relevance floor). Cases of one
`stability` group are one memory and one question in namespaces of different sizes: each must
pass, and their scores lie within STABLE_WITHIN of each other. Written for this suite,
none copied from a benchmark. `kind` groups the cases in the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The first hits an agent reads (the top of a prompt): where an `absent` memory must not be.
ABSENT_WITHIN = 3
# The most the score of one memory for one question may differ between namespaces of 1, about
# 25 and about 3,000 memories (a `stability` group).
STABLE_WITHIN = 0.15


@dataclass(frozen=True)
class Memory:
    content: str
    sensitive: bool = False
    category: str = ""
    tags: tuple[str, ...] = ()
    importance: float | None = None
    supersedes: int | None = None  # index of an earlier memory of the case this one replaces
    thread: str = ""  # the conversation it came from (context propagation runs along it)
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    memories: tuple[Memory, ...]
    query: str
    expect: int | None = 0  # index of the memory that must be found; None: nothing may be
    within: int = 1  # its rank must be at most this
    fillers: int = 20  # unrelated memories around the case's own (FILLERS, in order)
    large: bool = False  # the namespace also holds LARGE_NAMESPACE unrelated memories
    absent: tuple[int, ...] = ()  # indices of memories that must not come in the first three
    stability: str = ""  # cases of one group: one memory and question, namespaces of 3 sizes
    # the recall's filters (recallmesh.client FilterOptions), and as of when: just after the case
    # memory of this index was created (half a write gap later)
    filters: dict[str, Any] = field(default_factory=dict)
    as_of_after: int | None = None
    # asked through Context with its defaults instead of Recall: the expected memory must be in
    # the block (`within`: among its first that many lines), no `absent` memory anywhere in it;
    # with expect None the block must be empty (docs/decisions/0014)
    context: bool = False


def m(content: str, **kw: Any) -> Memory:
    return Memory(content, **kw)


# Unrelated one-line memories an agent might keep about a user; none mentions any case's
# subject. A case uses the first `fillers` of them.
FILLERS = (
    "Reads a chapter of a novel every night before sleeping.",
    "Has a grey cat called Pixel who hates the vacuum cleaner.",
    "Moved from the payments team to the search team in spring.",
    "Is trying a vegetarian diet on weekdays.",
    "Prefers window seats on long flights.",
    "Plays five-a-side football on Thursday evenings.",
    "Keeps a sourdough starter in the fridge and bakes on Sundays.",
    "Uses a standing desk for half of the working day.",
    "Learned to sail on a lake as a teenager.",
    "Listens to jazz playlists while writing code.",
    "Wants to run a half marathon before turning forty.",
    "Grows tomatoes and basil on the balcony.",
    "Drinks sparkling water instead of soda.",
    "Visits their grandmother on the first Sunday of each month.",
    "Collects old film cameras from flea markets.",
    "Takes the train to work and reads on the way.",
    "Is saving money for a kitchen renovation.",
    "Volunteers at the animal shelter twice a month.",
    "Likes strategy board games more than video games.",
    "Writes meeting notes in plain text files.",
    "Has a dentist appointment every six months.",
    "Enjoys hiking in the mountains in autumn.",
    "Bought a second-hand road bike last year.",
    "Speaks a little Portuguese from a year abroad.",
)

CASES: tuple[Case, ...] = (
    # --- a unique code word or name
    Case("code word in a sensitive memory", "code word", (
        m("Bank PIN is stored in the hardware wallet drawer, code word lighthouse.",
          sensitive=True),), "lighthouse"),
    Case("code word, not sensitive", "code word", (
        m("The shared folder for the offsite is called project marigold."),), "marigold"),
    Case("a rare person's name", "code word", (
        m("Thorvald from procurement approves hardware orders above 2,000 euros."),),
        "Who is Thorvald?"),
    Case("a product codename in a question", "code word", (
        m("Codename Bluefin is the internal name of the new mobile checkout."),
        m("The mobile team ships a release every second Tuesday."),),
        "what is bluefin"),
    Case("a name among similar memories", "code word", (
        m("Dr. Okonkwo is the user's cardiologist at the city hospital."),
        m("The user's dermatologist works at a private clinic downtown."),
        m("The user's dentist is on the second floor of the mall."),),
        "When did I last talk about Okonkwo?"),
    # --- an ID, number, date or URL
    Case("a ticket id", "identifier", (
        m("Incident INC-4821 was the database failover on the billing cluster."),
        m("Incident reviews are held on Fridays at 15:00."),), "INC-4821"),
    Case("an error code", "identifier", (
        m("Error E1047 from the printer means the fuser unit needs replacing."),),
        "printer shows E1047"),
    Case("a version number", "identifier", (
        m("The production cluster runs Kubernetes 1.29.4 since the last upgrade."),
        m("The staging cluster is upgraded a week before production."),),
        "which cluster is on 1.29.4"),
    Case("a date", "identifier", (
        m("The lease on the flat ends on 2027-03-31 and must be renewed a month before."),),
        "2027-03-31"),
    Case("a URL", "identifier", (
        m("The on-call dashboard lives at https://grafana.example.internal/d/oncall-7f3."),),
        "grafana.example.internal/d/oncall-7f3"),
    Case("a phone number", "identifier", (
        m("The plumber's number is +44 20 7946 0321, call before 8am."),),
        "+44 20 7946 0321"),
    Case("an amount of money", "identifier", (
        m("The monthly cloud budget for the team is capped at 4,750 dollars."),
        m("Travel expenses need a receipt for anything above 25 dollars."),),
        "4,750 dollars"),
    Case("an IP address", "identifier", (
        m("The office VPN gateway is at 10.42.7.1; use it only from managed laptops."),),
        "10.42.7.1"),
    # --- a sensitive memory found by its keywords
    Case("sensitive: where a secret is kept", "sensitive", (
        m("The API token for the deploy bot is in the team vault under deploy-bot-prod.",
          sensitive=True),), "deploy bot API token"),
    Case("sensitive: a medical fact", "sensitive", (
        m("User takes 50 mg sertraline every morning.", sensitive=True),), "sertraline dose"),
    Case("sensitive: among related non-sensitive memories", "sensitive", (
        m("The home alarm code is 7391, changed in January.", sensitive=True),
        m("The alarm company visits once a year for maintenance."),
        m("The home alarm beeps when the back door is left open."),),
        "home alarm code"),
    Case("sensitive: a password hint, query with other words around", "sensitive", (
        m("Router admin password hint: grandmother's maiden name plus 1962.", sensitive=True),),
        "what was the router admin password hint again?"),
    Case("sensitive: asked for by what it is", "sensitive", (
        m("Jonas's Kestrel VPN password is tulip-Orbit-88.", sensitive=True, tags=("work",)),
        m("Jonas works as a backend engineer at Kestrel Freight.", tags=("work",)),),
        "What is Jonas's VPN password?"),
    # --- a harmless question over a namespace that holds secrets: the secret stays out of
    # the first hits, unless the question asks for what it holds (issue 39)
    Case("harmless: a secret shares the person and the tag", "harmless", (
        m("Jonas works as a backend engineer at Kestrel Freight.", tags=("work",)),
        m("Jonas's Kestrel VPN password is tulip-Orbit-88.", sensitive=True, tags=("work",)),),
        "Where does Jonas work?", absent=(1,)),
    Case("harmless: a PIN shares the person", "harmless", (
        m("Maya's favourite UI library is Svelte; she finds React verbose.",
          category="preference"),
        m("Maya's bank PIN is 4921.", sensitive=True, tags=("maya", "bank")),),
        "which UI library does Maya like?", absent=(1,)),
    Case("harmless: a secret matches only by its tags", "harmless", (
        m("Health insurance renews every March with the same provider."),
        m("Door code for the clinic archive is 8812.", sensitive=True,
          tags=("health", "insurance")),),
        "when does the health insurance renew?", absent=(1,)),
    Case("harmless: a person with several secrets", "harmless", (
        m("Priya leads the data platform team since last autumn."),
        m("Priya's passport number is X1234567.", sensitive=True, tags=("priya",)),
        m("Priya's salary is 92,000 a year.", sensitive=True, tags=("priya",)),),
        "Which team does Priya lead?", absent=(1, 2)),
    Case("harmless: a medical secret about the same person", "harmless", (
        m("Tomasz runs every morning along the canal before work."),
        m("Tomasz takes 20 mg of fluoxetine daily.", sensitive=True, tags=("routine",)),),
        "What does Tomasz do in the morning?", absent=(1,)),
    # a name and an everyday word that a secret shares with the person's ordinary memories
    # (issue 56): no ordinary memory lacks them, so the question asks for no secret
    Case("harmless: a name and 'home', a secret of the home", "harmless", (
        m("Jonas works from home on Mondays and Fridays."),
        m("Jonas's home is a flat in Hamburg's harbour district."),
        m("The alarm code of Jonas's home is 4512.", sensitive=True, tags=("home",)),),
        "Where is Jonas's home?", expect=1, within=3, absent=(2,)),
    Case("harmless: a name and 'car', a secret of the car", "harmless", (
        m("Maya's car is a red Fiat 500 she parks behind the studio."),
        m("Maya hides the spare car key under the doormat.", sensitive=True, tags=("car",)),),
        "What car does Maya drive?", absent=(1,)),
    Case("harmless: a name and 'bank', a secret of the bank", "harmless", (
        m("Priya banks with Lumen Bank and pays everything by phone."),
        m("Priya's bank PIN is 8856.", sensitive=True, tags=("money",)),),
        "Which bank does Priya use?", absent=(1,)),
    Case("harmless: a name and 'Arbeit' (German), a secret of work", "harmless", (
        m("Jonas arbeitet bei Kestrel Freight und fährt mit dem Auto zur Arbeit."),
        m("Das VPN-Passwort von Jonas für die Arbeit ist tulip-Orbit-88.", sensitive=True,
          tags=("arbeit",)),),
        "Was macht Jonas bei der Arbeit?", absent=(1,)),
    Case("harmless: a name and 'casa' (Spanish), a secret of the home", "harmless", (
        m("La casa de Lucía está en Valencia, cerca del puerto."),
        m("El código de la alarma de la casa de Lucía es 7310.", sensitive=True,
          tags=("casa",)),),
        "¿Dónde está la casa de Lucía?", absent=(1,)),
    # ... and the secret asked for by what only it holds, beside the person's ordinary memories
    Case("sensitive: a drug only the secret names", "sensitive", (
        m("Jonas takes 50 mg of sertraline every morning.", sensitive=True),
        m("Jonas runs along the Alster every morning."),
        m("Jonas works as a backend engineer at Kestrel Freight."),
        m("Jonas takes the ferry to work when it rains."),),
        "How much sertraline does Jonas take?"),
    Case("sensitive: a password asked for in Spanish", "sensitive", (
        m("La contraseña del VPN de Andrés es coral-Moon-46.", sensitive=True),
        m("Andrés trabaja en Ipanema Data como administrador de bases de datos."),),
        "¿Cuál es la contraseña del VPN de Andrés?"),
    # --- a paraphrase with no shared word
    Case("paraphrase: locked out", "paraphrase", (
        m("A spare house key is hidden under the blue flowerpot on the balcony."),),
        "How can I get inside if I forget my keys?", within=3),
    Case("paraphrase: food intolerance", "paraphrase", (
        m("Cannot digest lactose; milk makes them ill."),),
        "Which dairy products should the user avoid?", within=3),
    Case("paraphrase: commute", "paraphrase", (
        m("Cycles to the office along the river path every morning."),),
        "How does the user travel to work?", within=3),
    Case("paraphrase: pet", "paraphrase", (
        m("Adopted a retired greyhound named Comet in March."),),
        "Does the user own a dog?", within=3),
    # --- a superseded fact: the newest first
    Case("superseded by an explicit relation", "superseded", (
        m("The team's CI runs on Jenkins."),
        m("The team's CI moved from Jenkins to GitHub Actions.", supersedes=0),),
        "Which CI does the team use?", expect=1),
    Case("superseded, newer statement only", "superseded", (
        m("The user's favourite editor is Vim."),
        m("The user switched editors and now prefers VS Code over Vim."),),
        "What is the user's favourite editor?", expect=1),
    Case("superseded: the ended fact lends its thread neighbour nothing", "superseded", (
        m("Jonas lives in Munich, in the Schwabing district.", thread="chat-1"),
        m("Favourite band is Radiohead; owns every album on vinyl.", thread="chat-1"),
        m("Jonas moved from Munich to Hamburg last month.", supersedes=0, thread="chat-2"),),
        "Where does Jonas live now?", expect=2, absent=(1,)),
    Case("superseded address", "superseded", (
        m("Lives at Elm Street 12 in Leeds."),
        m("Moved out of Elm Street; now lives at Harbour Road 3 in Bristol.", supersedes=0),),
        "Where does the user live now?", expect=1),
    # --- a negation or "not X"
    Case("negation: no longer drinks", "negation", (
        m("Does not drink coffee any more, only green tea."),
        m("Orders a flat white at the airport café."),),
        "Does the user still drink coffee?", within=3),
    Case("negation: not available", "negation", (
        m("Is not available for meetings on Friday afternoons."),),
        "Can I book a meeting on Friday afternoon?"),
    Case("negation: avoid", "negation", (
        m("Never book the user on flights with a layover in Frankfurt."),),
        "flights via Frankfurt"),
    # --- a one-word query
    Case("one word: allergies", "one word", (
        m("Allergic to penicillin and to shellfish."),), "allergies", within=3),
    Case("one word: birthday", "one word", (
        m("The user's birthday is on the 9th of November."),), "birthday"),
    Case("one word: wifi", "one word", (
        m("The guest wifi network at home is called Nebula-Guest."),), "wifi"),
    Case("one word: salary", "one word", (
        m("Negotiated a salary of 68,000 a year in the new contract."),), "salary"),
    # --- a typo
    Case("typo in a name", "typo", (
        m("Marguerite handles the visa paperwork for new hires."),),
        "who handles visas, margerite?", within=3),
    Case("typo in a common word", "typo", (
        m("The quarterly report is due on the last Friday of the quarter."),),
        "when is the quartrly reprot due", within=3),
    Case("typo in a one-word query", "typo", (
        m("Allergic to penicillin and to shellfish."),), "penicilin", within=3),
    # issue 56: a misspelt word is read as the namespace's most similar word
    # (docs/decisions/0013-misspellings-by-trigram.md). The first four came back empty before
    # it (every estimate below the floor); the others were found, with lower scores.
    Case("typos in two words of a short query", "typo", (
        m("Allergic to penicillin and to shellfish."),), "penicilin alergy", fillers=5),
    Case("typos in three words, in a namespace of two", "typo", (
        m("The vacuum cleaner filter is replaced every three months."),
        m("The car is due for its MOT in June."),), "vacum clener filtre", fillers=0),
    Case("typos in two words among five memories", "typo", (
        m("The thermostat schedule drops the heating to 17 degrees at night."),),
        "termostat shedule", fillers=5),
    Case("typos in two words of a long question", "typo", (
        m("The thermostat schedule drops the heating to 17 degrees at night."),),
        "I keep waking up cold and I wonder what the termostat shedule does at night, can you "
        "remind me what we set it to?", fillers=5),
    Case("typos in two words, the issue's example", "typo", (
        m("Max dose of ibuprofen is 400 mg; the dosage for the kids is on the box."),
        m("The car is due for its MOT in June."),
        m("Book club meets on the second Tuesday."),), "ibuprofin dosege", fillers=0),
    Case("typo in one word of a long question", "typo", (
        m("The passport renewal appointment is at the consulate on the 14th of May."),),
        "I need to sort out my travel documents before the summer trip, so when was that "
        "pasport renewal appointment again and where did I have to go for it?"),
    Case("typos in two words of a long question among twenty", "typo", (
        m("The plumber, Mr. Henderson, fixed the leaking radiator in the bedroom."),),
        "I am writing up the list of repairs for the landlord, can you remind me who the "
        "plumer was that fixed the leaking radiater last winter?"),
    Case("typo nearer one neighbour than another", "typo", (
        m("Maya's cousin Ines lives in Lisbon and teaches maths."),
        m("Maya keeps a collection of embroidered cushions in the living room."),),
        "where does Maya's cousn live?"),
    Case("typos in a question nothing answers", "unanswerable", (
        m("The user's flat is on the fourth floor, no lift."),),
        "whats the wether forcast for tomorow?", expect=None),
    # --- a long question
    Case("long question", "long question", (
        m("The user's daughter Mia starts primary school in September at Greenfield."),),
        "I am trying to plan the family calendar for the autumn and I keep forgetting the "
        "details, so could you remind me what is happening with my daughter and school after "
        "the summer holidays, and which school it was that we picked in the end?"),
    Case("long question about a preference", "long question", (
        m("Prefers aisle seats and vegetarian meals when flying."),),
        "I'm booking flights to Lisbon for the conference next month and the form asks about "
        "seating and meals, and I can never remember what I usually choose, what did I tell "
        "you I prefer on planes?", within=3),
    # --- a query in a namespace of 2,000 unrelated memories
    Case("2,000 unrelated memories: a name", "large namespace", (
        m("Ingrid Solberg is the user's contact at the Oslo architecture firm."),),
        "Ingrid Solberg", large=True),
    Case("2,000 unrelated memories: a paraphrase", "large namespace", (
        m("Is learning to play the cello with a teacher on Wednesday evenings."),),
        "What musical instrument is the user studying?", within=3, large=True),
    Case("2,000 unrelated memories: an id", "large namespace", (
        m("Order #A77-5120 is the replacement laptop battery, arriving next week."),),
        "A77-5120", large=True),
    # --- memories stored close together that are not one conversation
    Case("neighbours in time do not outrank the match", "time neighbours", (
        m("The garage door opener code is 4-2-4-2.", sensitive=True),
        m("The garden hose is in the shed."),
        m("The car needs new tyres before winter."),), "garage door opener"),
    Case("importance does not bury the only match", "time neighbours", (
        m("The boiler was serviced on 3 October by Kessler Heating.", importance=0.2),
        m("Quarterly goals are due to the manager next week.", importance=0.9),
        m("The performance review is scheduled for December.", importance=0.9),),
        "Kessler Heating"),
    # --- a question nothing stored answers: the answer is empty (issue 39)
    Case("unanswerable: the weather", "unanswerable", (
        m("The user's flat is on the fourth floor, no lift."),),
        "What is the weather like today?", expect=None),
    Case("unanswerable: general knowledge", "unanswerable", (
        m("Jonas works as a backend engineer at Kestrel Freight."),),
        "Who won the last football world cup?", expect=None, fillers=5),
    Case("unanswerable: a fact never told", "unanswerable", (
        m("Allergic to penicillin and to shellfish."),
        m("Has a dentist appointment every six months."),),
        "What is the user's blood type?", expect=None),
    # --- one memory and question in namespaces of 1, about 25 and about 3,000 memories:
    # found each time, with scores within STABLE_WITHIN of each other
    Case("score stability: alone", "score stability", (
        m("The user's passport expires in March 2027."),),
        "When does my passport expire?", fillers=0, stability="passport"),
    Case("score stability: among 24", "score stability", (
        m("The user's passport expires in March 2027."),),
        "When does my passport expire?", fillers=24, stability="passport"),
    Case("score stability: among 3,000", "score stability", (
        m("The user's passport expires in March 2027."),),
        "When does my passport expire?", large=True, stability="passport"),
    # --- the same memory written twice is stored once (and so comes once)
    Case("duplicates: written twice, found once", "duplicates", (
        m("Prefers tea over coffee in the morning."),
        m("Prefers tea over coffee in the morning."),
        m("Drinks coffee only after lunch."),),
        "Does the user prefer tea or coffee in the morning?"),
    Case("duplicates: case and spacing do not make a new memory", "duplicates", (
        m("The spare key is with the neighbour at number 14."),
        m("the spare key is with the  neighbour at number 14."),),
        "Where is the spare key?"),
    # --- a newer restatement without a relation: the newest first
    Case("superseded, restated without a relation", "superseded", (
        m("Lives at Harbour Road 3."),
        m("Moved out of Harbour Road; now lives in a house on Mill Lane."),),
        "Where does the user live now?", expect=1),
    # Two notes on one subject are not a restatement, even when the newer says "currently" or
    # "changed": the one the question asks about stays first (issue 42: reordering such
    # documents newest first cost SciFact 0.04 nDCG@10).
    Case("superseded: two notes on one subject are not a restatement", "superseded", (
        m("Study notes: statin therapy lowers LDL cholesterol and cuts major vascular events "
          "in patients with coronary disease; the benefit held across age groups and both "
          "sexes in a meta-analysis of randomised trials."),
        m("Study notes: intensive statin therapy in patients with coronary disease raised the "
          "risk of new-onset diabetes, which is currently weighed against the fewer vascular "
          "events; glucose levels changed only modestly."),),
        "Does statin therapy cut vascular events across age groups and sexes?"),
)

# Filters as an agent's developer uses them (issue 43): the answer from the part of the memory
# asked for, not the best match of the whole namespace.
FILTERED: tuple[Case, ...] = (
    Case("as of before a change: the fact then", "filters", (
        m("Lena works at Siemens as an engineer."),
        m("Lena left Siemens and now works at Bosch.", supersedes=0)),
        "Where does Lena work?", absent=(1,), as_of_after=0),
    Case("a metadata filter: the note from that source", "filters", (
        m("Standup moved to 10:00 on Mondays.", metadata={"source": "email"}),
        m("Standup is at 9:30 every weekday.", metadata={"source": "slack"})),
        "When is standup?", expect=1, absent=(0,), filters={"metadata": {"source": "slack"}}),
    Case("none of a tag: private notes stay out", "filters", (
        m("Sam's therapist appointment is on Fridays.", tags=("private",)),
        m("Sam's team retro is on Fridays.", tags=("work",))),
        "What does Sam have on Fridays?", expect=1, absent=(0,),
        filters={"tags_none": ["private"]}),
    Case("a thread filter: the decision of that conversation", "filters", (
        m("We chose Postgres for the billing service.", thread="chat-a"),
        m("We chose MongoDB for the analytics prototype.", thread="chat-b")),
        "Which database did we choose?", expect=1, absent=(0,),
        filters={"threads": ["chat-b"]}),
)

# Multilingual cases: the same checks in other languages (issue 27 asks German, Chinese and
# Japanese at least).
MULTILINGUAL: tuple[Case, ...] = (
    Case("German: a compound word", "multilingual", (
        m("Der Hausarzt heißt Dr. Brandt und hat Sprechstunde am Dienstag."),),
        "Wann hat der Hausarzt Sprechstunde?"),
    Case("German: a one-word query", "multilingual", (
        m("Die Steuererklärung muss bis Ende Juli abgegeben werden."),), "Steuererklärung"),
    Case("German: a typo in a one-word query", "multilingual", (
        m("Die Schmerztabletten liegen im Badezimmerschrank."),), "Schmerztableten"),
    Case("German: typos in two words of a short question", "multilingual", (
        m("Der Zahnarzttermin ist am Donnerstag um neun Uhr."),),
        "Wann ist der Zahnartztermin am Donnerstg?"),
    Case("German: a typo in a long question", "multilingual", (
        m("Die Hausratversicherung läuft über die Allianz und wird im März verlängert."),),
        "Ich sortiere gerade die Unterlagen für die Wohnung und weiß nicht mehr, bei welcher "
        "Firma unsere Hausratversicherrung eigentlich abgeschlossen ist und wann sie "
        "verlängert wird?"),
    Case("Spanish: a missing accent and a typo", "multilingual", (
        m("La reunión con el arquitecto es el martes a las diez."),),
        "¿Cuándo es la reunion con el arqitecto?"),
    Case("German: typos in two words among five memories", "multilingual", (
        m("Der Impftermin für den Hund ist im September."),), "Impftemrin Hundd", fillers=5),
    Case("Spanish: typos in two words among five memories", "multilingual", (
        m("La farmacia de guardia más cercana está en la calle Mayor."),),
        "farmasia de gardia", fillers=5),
    Case("Spanish: typos in a long question", "multilingual", (
        m("La farmacia de guardia más cercana está en la calle Mayor."),),
        "Esta noche me duele mucho la cabeza y necesito saber dónde está la farmasia de gardia "
        "más cerca de casa", fillers=5),
    Case("Chinese: a name and a place", "multilingual", (
        m("王伟是用户在上海办公室的同事。"),), "王伟"),
    Case("Chinese: a question", "multilingual", (
        m("用户对花生过敏。"),), "花生过敏"),
    Case("Japanese: a one-word query", "multilingual", (
        m("毎週金曜日にジムで水泳をしている。"),), "水泳"),
    Case("Japanese: a question", "multilingual", (
        m("田中さんは来月大阪に引っ越す予定です。"),), "田中さんはどこに引っ越しますか"),
    # Sensitive memories are never embedded: only the lexical leg can find these.
    Case("German: a sensitive memory", "multilingual", (
        m("Die Kreditkarte liegt im Tresor hinter dem Bücherregal.", sensitive=True),),
        "Wo liegt die Kreditkarte?"),
    Case("Chinese: a sensitive memory", "multilingual", (
        m("银行卡密码写在书房抽屉里的笔记本上。", sensitive=True),), "银行卡密码"),
    Case("Japanese: a sensitive memory", "multilingual", (
        m("マンションの暗証番号は金庫の中のメモに書いてある。", sensitive=True),), "暗証番号"),
)

# Context: what an agent puts before its prompt, in a namespace of memories about one person
# (the demo's kind: every memory names her, so her name matches all of them). Issue 56.
_PERSON = (
    m("Maya is allergic to peanuts; always check restaurant menus for peanut oil."),
    m("Maya is vegetarian on weekdays and eats fish at weekends."),
    m("Maya's GitHub handle is maya-ok."),
    m("Maya's manager at Northwind Labs is Tomás Ribeiro."),
    m("Maya's home network uses a Ubiquiti router; the Wi-Fi name is Biscoito-5G."),
    m("Maya uses Neovim with the LazyVim distribution as her editor."),
    m("Maya's sister Adaeze lives in Manchester and is a nurse."),
    m("Maya is training for the Lisbon half marathon in October."),
    m("Maya lives in Lisbon and works remotely for Northwind Labs."),
    m("Maya reads science fiction; she loved the Murderbot Diaries."),
)
_OTHER = (
    m("Jonas cannot eat gluten; he has coeliac disease."),
    m("Jonas's GitHub handle is jkrause."),
    m("Jonas's team lead is Greta Vogel."),
    m("Jonas sails on the Alster on Sunday mornings."),
    m("Jonas lives in Hamburg near the harbour."),
)
_NOT_FOOD = (2, 3, 4, 5)
CONTEXT: tuple[Case, ...] = (
    Case("context: cooking for her packs her diet, not her handle", "context", _PERSON,
         "What should I cook for Maya?", within=3, fillers=0, absent=_NOT_FOOD, context=True),
    Case("context: cooking for another person", "context", _OTHER,
         "What should I cook for Jonas?", within=3, fillers=0, absent=(1, 2, 3), context=True),
    Case("context: her manager, alone", "context", _PERSON, "Who is Maya's manager?",
         expect=3, fillers=0, absent=(0, 1, 2, 4), context=True),
    Case("context: off-topic, a capital", "context", _PERSON,
         "What is the capital of Australia?", expect=None, fillers=0, context=True),
    Case("context: off-topic, a poem", "context", _PERSON, "Write a haiku about autumn leaves.",
         expect=None, fillers=0, context=True),
    Case("context: off-topic, a repair", "context", _PERSON, "How do I change a bicycle tyre?",
         expect=None, fillers=0, context=True),
    Case("context: off-topic, another person's", "context", _OTHER,
         "What is the capital of Australia?", expect=None, fillers=0, context=True),
    Case("context: cooking for her, in Portuguese", "context", _PERSON,
         "Que devo cozinhar para a Maya?", within=3, fillers=0, absent=_NOT_FOOD, context=True),
    Case("context: cooking for her, in German", "context", _PERSON,
         "Was soll ich für Maya kochen?", within=3, fillers=0, absent=_NOT_FOOD, context=True),
)


# Task prompts an agent sends before acting (issue 66): one person's namespace of a few topics,
# an instruction that shares an everyday word with a memory the task does not need. The memory
# the task needs must come in the first 3, and the one that merely shares the word must not
# (`absent`). Neighbours in German and Spanish, with other names.
_JONAS = (
    m("Jonas is allergic to shellfish and carries antihistamines."),
    m("Jonas eats no meat on weekdays."),
    m("Jonas's book club reads a crime novel every month."),
    m("Jonas lives in Hamburg, near the harbour."),
    m("Jonas works as a structural engineer."),
    m("Jonas runs along the Alster on Sunday mornings."),
    m("Jonas always takes the night train to Vienna."),
    m("Jonas's sister Frieda is a paediatric nurse."),
)
_AIKO = (
    m("Aiko loves quiet mountain towns and finds big resorts boring."),
    m("Aiko plays the violin in a string quartet."),
    m("Aiko runs Arch Linux on her laptop."),
    m("Aiko writes all her code in Neovim."),
    m("Aiko's team uses TypeScript strict mode for every new package."),
    m("Aiko prefers trains to planes for trips under five hours."),
    m("Aiko's manager is Kenji Mori."),
    m("Aiko is vegetarian."),
)
_JONAS_DE = (
    m("Jonas ist allergisch gegen Meeresfrüchte."),
    m("Jonas isst werktags kein Fleisch."),
    m("Jonas arbeitet am Freitag immer von zu Hause."),
    m("Jonas wohnt in Hamburg, nahe am Hafen."),
    m("Jonas spielt Cello in einem Laienorchester."),
    m("Jonas fährt mit dem Nachtzug nach Wien."),
)
_LUCIA = (
    m("Lucía es alérgica al marisco."),
    m("Lucía no come carne entre semana."),
    m("Lucía trabaja desde casa los viernes."),
    m("Lucía vive en Valencia, cerca del puerto."),
    m("Lucía toca la guitarra en un grupo de amigos."),
    m("Lucía viaja siempre en tren a Madrid."),
)
TASKS: tuple[Case, ...] = (
    Case("task: a table for dinner, not the book club", "task prompt", _JONAS,
         "Book Jonas a table for dinner on Friday.", expect=0, within=3, absent=(2,),
         fillers=0),
    Case("task: plan a trip, not the instrument he plays", "task prompt", _AIKO,
         "Plan a weekend away for Aiko.", expect=0, within=3, absent=(1,), fillers=0),
    Case("task: set up a laptop, not the new package", "task prompt", _AIKO,
         "Set up a new laptop for Aiko.", expect=2, within=1, fillers=0),
    Case("task: a table for dinner, in German", "task prompt", _JONAS_DE,
         "Reserviere für Jonas am Freitag einen Tisch zum Abendessen.", expect=0, within=3,
         absent=(2,), fillers=0),
    Case("task: a table for dinner, in Spanish", "task prompt", _LUCIA,
         "Reserva una mesa para cenar el viernes con Lucía.", expect=0, within=3,
         absent=(2,), fillers=0),
)

# A subject that only a secret names (issue 67, docs/decisions/0023): an ordinary memory speaks
# of it in other words ("bicycle"), the secret in the question's ("bike"). The words rule of
# decision 0015 lets the secret through; the meaning rule keeps it for the question that asks
# for what it guards. Neighbours: other subjects, people and languages. The harmless ones ask
# for the ordinary memory within 3: what they check is the secret; the first place among
# everyday words is issue 66's ranking (an everyday word of a filler comes first).
_ANA = (
    m("Ana leaves her bicycle in the hallway."),
    m("Ana's bike lock combination is 4-1-7-2.", sensitive=True),
    m("Ana works as a nurse at St Mary's."),
)
_TOM = (
    m("Tom's flat has fast fibre internet."),
    m("Tom's wifi password is river-Nest-12.", sensitive=True),
    m("Tom plays football on Sundays."),
)
_PRIYA = (
    m("Priya uses an old Android handset."),
    m("The unlock PIN of Priya's phone is 2580.", sensitive=True),
    m("Priya's sister lives in Leeds."),
)
_JONAS_RAD = (
    m("Jonas stellt sein Fahrrad im Flur ab."),
    m("Das Zahlenschloss am Rad von Jonas hat die Kombination 4-1-7-2.", sensitive=True),
    m("Jonas arbeitet bei Kestrel Freight."),
)
_LUCIA_BICI = (
    m("Lucía deja la bicicleta en el pasillo."),
    m("La combinación del candado de la bici de Lucía es 4-1-7-2.", sensitive=True),
    m("Lucía trabaja en un hospital de Valencia."),
)
SUBJECT_SECRETS = (
    Case("harmless: a subject only the secret names (bike)", "harmless", _ANA,
         "Where does Ana keep her bike?", within=3, absent=(1,)),
    Case("sensitive: what the bike lock guards, in other words", "sensitive", _ANA,
         "What opens Ana's bike lock?", expect=1),
    Case("harmless: a subject only the secret names (wifi)", "harmless", _TOM,
         "How fast is Tom's wifi?", within=3, absent=(1,)),
    Case("sensitive: the wifi password", "sensitive", _TOM,
         "What is Tom's wifi password?", expect=1),
    Case("harmless: a subject only the secret names (phone)", "harmless", _PRIYA,
         "What phone does Priya have?", within=3, absent=(1,)),
    Case("sensitive: what unlocks the phone", "sensitive", _PRIYA,
         "How do I unlock Priya's phone?", expect=1),
    Case("harmless: a subject only the secret names, in German", "harmless", _JONAS_RAD,
         "Wo steht das Rad von Jonas?", within=3, absent=(1,)),
    Case("sensitive: the bike lock's combination, in German", "sensitive", _JONAS_RAD,
         "Welche Kombination hat das Schloss am Rad von Jonas?", expect=1),
    Case("harmless: a subject only the secret names, in Spanish", "harmless", _LUCIA_BICI,
         "¿Dónde guarda Lucía la bici?", within=3, absent=(1,)),
    Case("sensitive: the bike lock's combination, in Spanish", "sensitive", _LUCIA_BICI,
         "¿Cuál es la combinación del candado de Lucía?", expect=1),
)

# Two memories that share only a person's name, and a question that means one of them: the
# lexical leg ranks them by a hair (the name is all either holds of the query), the vector leg
# by meaning, and min-max fusion gives each 1 + 0, an exact tie that the memory id used to break
# (a coin flip per load; CI found docs/mcp.md's auto-recall example so). The tie goes to the
# relevance estimate of each hit's own evidence (recallmesh/gateway/stages.py ties_by_estimate).
# Neighbours: the other memory asked for, other names and words, a task, German, Spanish,
# Chinese.
_MAYA_PAIR = (
    m("Maya's favourite frontend framework is Svelte; she finds React verbose."),
    m("Maya's cat is called Pixel and hates the vacuum cleaner."),
)
_TOMAS_PAIR = (
    m("Tomás parks his bike behind the office."),
    m("Tomás takes his coffee black with no sugar."),
)
_LENA_PAIR = (
    m("Lena is vegan and avoids all dairy."),
    m("Lena's car is a blue Golf."),
)
_JONAS_PAIR = (
    m("Jonas besitzt einen alten roten Volvo."),
    m("Jonas' Katze heißt Mimi."),
)
_LUCIA_PAIR = (
    m("A Lucía le encanta el jazz y la bossa nova."),
    m("Lucía tiene un perro llamado Toby."),
)
_WANG_PAIR = (
    m("小王的猫叫咪咪。"),
    m("小王在银行上班。"),
)
SHARED_NAME = (
    Case("two sharing a name: the UI library she likes", "shared name", _MAYA_PAIR,
         "which UI library does Maya like?", expect=0, fillers=0),
    Case("two sharing a name: her pet", "shared name", _MAYA_PAIR,
         "what pet does Maya have?", expect=1, fillers=0),
    Case("two sharing a name: how he takes his espresso", "shared name", _TOMAS_PAIR,
         "How does Tomás like his espresso?", expect=1, fillers=0),
    Case("two sharing a name: where he leaves his bicycle", "shared name", _TOMAS_PAIR,
         "Where does Tomás leave his bicycle?", expect=0, fillers=0),
    Case("two sharing a name: a task, parking", "shared name", _LENA_PAIR,
         "Book Lena a parking space near the office.", expect=1, fillers=0),
    Case("two sharing a name: a task, dinner", "shared name", _LENA_PAIR,
         "Pick a restaurant for Lena's dinner tonight.", expect=0, fillers=0),
    Case("two sharing a name: his car, in German", "shared name", _JONAS_PAIR,
         "Welches Auto fährt Jonas?", expect=0, fillers=0),
    Case("two sharing a name: his pet, in German", "shared name", _JONAS_PAIR,
         "Wie heißt das Haustier von Jonas?", expect=1, fillers=0),
    Case("two sharing a name: her music, in Spanish", "shared name", _LUCIA_PAIR,
         "¿Qué música prefiere Lucía?", expect=0, fillers=0),
    Case("two sharing a name: her pet, in Spanish", "shared name", _LUCIA_PAIR,
         "¿Cómo se llama la mascota de Lucía?", expect=1, fillers=0),
    Case("two sharing a name: his pet, in Chinese", "shared name", _WANG_PAIR,
         "小王养了什么宠物？", expect=0, fillers=0),
    Case("two sharing a name: his work, in Chinese", "shared name", _WANG_PAIR,
         "小王在哪里工作？", expect=1, fillers=0),
)

ALL_CASES = (CASES + FILTERED + MULTILINGUAL + CONTEXT + TASKS + SUBJECT_SECRETS
             + SHARED_NAME)
