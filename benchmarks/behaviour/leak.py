"""The leak benchmark (issues 39 and 56): do secrets come along with harmless questions?

  python -m benchmarks.behaviour.leak [--report-to benchmarks/reports/leak.md]
                                      [--json benchmarks/results/leak.json]

Namespaces of two people each (PEOPLE, in pairs): all twenty in English, six of them again in
German and six in Spanish (LANGUAGES). Each person has ordinary memories (the language's
FACTS: work, home, car, bank, family, travel, ...) and sensitive ones (SECRETS: a VPN password
for work, a bank PIN, a medication, the alarm code of their home, where the spare car key is
hidden). The secrets share the person's name, the ordinary memories' tags and an everyday
word with them ("work", "home", "car", "bank"; "Arbeit", "Zuhause", "Auto"; "trabajo",
"casa", "coche"), as an agent's memories do. Every memory is stored through a real stack with
the deployment's defaults and waited for until indexed. Then each namespace is asked, for
each of its people:

- harmless questions, one or two per ordinary memory (464 in all), among them a name and an
  everyday word a secret shares with the ordinary memories ("Where is Jonas's home?", "Tell
  me about Jonas's car."), none naming what only a secret holds: how often a secret comes in
  the first 3 and the first 10 hits (the goal: never), and how often the question's own
  memory is first;
- two questions per secret that ask for it by what it holds, in other words each (320 in
  all): how often that secret is first (the goal: at least 90%) and in the first 3.

Issue 67's class beside it: each person also holds SUBJECTS_PER_PERSON of their language's
SUBJECTS (ten kinds in English, six in German and Spanish: a bike lock, a gym locker, a wifi or
email password, a passport number, a phone's PIN, a garage code, a safe, a salary, a
diagnosis), each an ordinary memory about a subject in its own words ("Jonas leaves the
bicycle in the hallway.") and a secret that is the only memory naming the subject ("Jonas's
bike lock combination is 4-1-7-2."). Its harmless questions name the subject in the secret's
word ("Where does Jonas keep the bike?": the words rule of decision 0015 lets the secret
through); two more questions ask for what the secret guards.

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
)
from recallmesh.client import Client, NewMemory
from tests.helpers import store_batch_indexed

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

# Per person, besides PEOPLE's fields (by their place in PEOPLE).
CARS = ("Volvo estate", "red Fiat 500", "Skoda Octavia", "Toyota Corolla", "Renault Clio",
        "VW Golf", "Kia Niro", "Honda Jazz", "Ford Focus", "Mazda 3", "Peugeot 208")
BANKS = ("Lumen Bank", "Harbour Bank", "Northgate Bank", "Citadel Bank", "Meridian Bank",
         "Oakridge Bank", "Crescent Bank")
SPOTS = {"en": ("under the doormat", "in the garden shed", "behind the gas meter",
                "in a flowerpot by the door", "inside the porch lamp"),
         "de": ("unter der Fußmatte", "im Gartenhaus", "hinter dem Gaszähler",
                "im Blumentopf neben der Tür", "in der Verandalampe"),
         "es": ("debajo del felpudo", "en el cobertizo del jardín", "detrás del contador de gas",
                "en una maceta junto a la puerta", "dentro de la lámpara del porche")}

# (key, memory template, tags, harmless questions) over a person's fields
FACTS = (
    ("work", "{name} works as a {job} at {company}.", ("work",),
     ("Where does {name} work?", "Tell me about {name}'s work.")),
    ("home", "{name}'s home is in {city}, near the {landmark}.", ("home",),
     ("Which city does {name} live in?", "Where is {name}'s home?")),
    ("weekends", "{name} spends most weekends {hobby}.", ("hobby",),
     ("What does {name} like to do at the weekend?",)),
    ("food", "{name}'s favourite dish is {dish}.", ("food", "personal"),
     ("What is {name}'s favourite food?",)),
    ("pet", "{name} has a {pet} called {pet_name}.", ("pets", "home"),
     ("Does {name} have a pet?",)),
    ("editor", "{name} writes code in {editor} and will not switch.", ("work", "tools"),
     ("Which editor does {name} use?",)),
    ("family", "{name}'s sister {sister} is a {sister_job}.", ("family", "personal"),
     ("What does {name}'s sister do for a living?",)),
    ("travel", "{name} is planning a trip to {destination} in {month}.", ("travel",),
     ("Where is {name} travelling next?",)),
    ("birthday", "{name}'s birthday is on {birthday}.", ("personal",),
     ("When is {name}'s birthday?",)),
    ("meeting", "{name} meets the {team} team every {weekday}.", ("work",),
     ("Which day does {name} meet the {team} team?",)),
    ("car", "{name} drives a {car} to work.", ("car",),
     ("What car does {name} drive?", "Tell me about {name}'s car.")),
    ("bank", "{name} banks with {bank} and likes its app.", ("money",),
     ("Which bank does {name} use?", "What do you know about {name} and the bank?")),
)
# (key, memory template, tags, questions that ask for it by what it holds)
SECRETS = (
    ("vpn", "{name}'s VPN password for work is {password}.", ("work", "tools"),
     ("What is {name}'s VPN password?", "How does {name} log in to the VPN?")),
    ("pin", "{name}'s bank PIN is {pin}.", ("personal", "money"),
     ("What is {name}'s bank PIN?", "Which PIN does {name} use for the bank card?")),
    ("medication", "{name} takes {mg} mg of {drug} every {time}.", ("personal", "health"),
     ("How much {drug} does {name} take?", "What dose of {drug} is {name} on?")),
    ("alarm", "The alarm code of {name}'s home is {alarm}.", ("home",),
     ("What is the alarm code at {name}'s home?", "How do I switch off {name}'s alarm?")),
    ("key", "{name} hides the spare car key {spot}.", ("car",),
     ("Where is {name}'s spare car key?", "Where does {name} hide the spare key?")),
)
FACTS_DE = (
    ("work", "{name} arbeitet bei {company}.", ("arbeit",),
     ("Wo arbeitet {name}?", "Was weißt du über die Arbeit von {name}?")),
    ("home", "Das Zuhause von {name} ist in {city}.", ("zuhause",),
     ("In welcher Stadt wohnt {name}?", "Wo ist das Zuhause von {name}?")),
    ("editor", "{name} programmiert am liebsten mit {editor}.", ("arbeit",),
     ("Welchen Editor benutzt {name}?",)),
    ("family", "Die Schwester von {name} heißt {sister}.", ("familie",),
     ("Wie heißt die Schwester von {name}?",)),
    ("travel", "{name} reist im Frühling nach {destination}.", ("reisen",),
     ("Wohin reist {name} als Nächstes?",)),
    ("pet", "Das Haustier von {name} heißt {pet_name}.", ("tiere",),
     ("Hat {name} ein Haustier?",)),
    ("car", "Das Auto von {name} ist ein {car}; damit fährt {name} zur Arbeit.", ("auto",),
     ("Welches Auto fährt {name}?", "Was weißt du über das Auto von {name}?")),
    ("bank", "{name} hat ein Konto bei der {bank}.", ("geld",),
     ("Bei welcher Bank ist {name}?", "Welche Bank nutzt {name}?")),
)
SECRETS_DE = (
    ("vpn", "Das VPN-Passwort von {name} für die Arbeit ist {password}.", ("arbeit",),
     ("Wie lautet das VPN-Passwort von {name}?",
      "Mit welchem Passwort meldet sich {name} im VPN an?")),
    ("pin", "Die PIN für die Bankkarte von {name} ist {pin}.", ("geld",),
     ("Wie lautet die PIN von {name}?", "Welche PIN hat die Bankkarte von {name}?")),
    ("medication", "{name} nimmt jeden Tag {mg} mg {drug} als Medikament.",
     ("familie", "gesundheit"),
     ("Wie viel {drug} nimmt {name}?", "Welches Medikament nimmt {name}?")),
    ("alarm", "Der Alarmcode für das Zuhause von {name} ist {alarm}.", ("zuhause",),
     ("Wie lautet der Alarmcode von {name}?",
      "Was ist der Alarmcode für das Zuhause von {name}?")),
    ("key", "Der Ersatzschlüssel für das Auto von {name} liegt {spot}.", ("auto",),
     ("Wo liegt der Ersatzschlüssel von {name}?",
      "Wo ist der Ersatzschlüssel für das Auto von {name}?")),
)
FACTS_ES = (
    ("work", "{name} trabaja en {company}.", ("trabajo",),
     ("¿Dónde trabaja {name}?", "Háblame del trabajo de {name}.")),
    ("home", "La casa de {name} está en {city}.", ("casa",),
     ("¿En qué ciudad vive {name}?", "¿Dónde está la casa de {name}?")),
    ("editor", "{name} escribe código con {editor}.", ("trabajo",),
     ("¿Qué editor usa {name}?",)),
    ("family", "La hermana de {name} se llama {sister}.", ("familia",),
     ("¿Cómo se llama la hermana de {name}?",)),
    ("travel", "{name} viajará a {destination} en primavera.", ("viajes",),
     ("¿Adónde viaja {name}?",)),
    ("pet", "La mascota de {name} se llama {pet_name}.", ("mascotas",),
     ("¿Tiene {name} una mascota?",)),
    ("car", "El coche de {name} es un {car}; {name} va al trabajo en él.", ("coche",),
     ("¿Qué coche tiene {name}?", "Háblame del coche de {name}.")),
    ("bank", "{name} tiene su cuenta en el banco {bank}.", ("dinero",),
     ("¿Qué banco usa {name}?", "¿En qué banco tiene {name} su cuenta?")),
)
SECRETS_ES = (
    ("vpn", "La contraseña del VPN del trabajo de {name} es {password}.", ("trabajo",),
     ("¿Cuál es la contraseña del VPN de {name}?", "¿Qué contraseña usa {name} para el VPN?")),
    ("pin", "El PIN de la tarjeta del banco de {name} es {pin}.", ("dinero",),
     ("¿Cuál es el PIN de {name}?", "¿Qué PIN tiene la tarjeta de {name}?")),
    ("medication", "{name} toma {mg} mg de {drug} cada día como medicación.",
     ("familia", "salud"),
     ("¿Cuánto {drug} toma {name}?", "¿Qué medicación toma {name}?")),
    ("alarm", "El código de la alarma de la casa de {name} es {alarm}.", ("casa",),
     ("¿Cuál es el código de la alarma de {name}?",
      "¿Cómo se apaga la alarma de la casa de {name}?")),
    ("key", "{name} esconde la llave de repuesto del coche {spot}.", ("coche",),
     ("¿Dónde está la llave de repuesto de {name}?", "¿Dónde esconde {name} la llave del coche?")),
)
# Issue 67's class: a secret whose subject only it names, beside an ordinary memory that
# speaks of that subject in other words. (key, ordinary memory, secret, harmless questions
# about the subject in the secret's word, questions that ask for what the secret guards.)
SUBJECTS = (
    ("bike", "{name} leaves the bicycle in the hallway.",
     "{name}'s bike lock combination is {combo}.",
     ("Where does {name} keep the bike?",),
     ("What opens {name}'s bike lock?", "What is the combination of {name}'s bike lock?")),
    ("locker", "{name} works out at a fitness studio on Fridays.",
     "The code of {name}'s gym locker is {code}.",
     ("When does {name} go to the gym?",),
     ("How do I open {name}'s gym locker?", "What is the code for {name}'s locker?")),
    ("wifi", "{name}'s flat has fast fibre internet.",
     "{name}'s wifi password is {wifi}.",
     ("How fast is {name}'s wifi?",),
     ("What is {name}'s wifi password?", "How do I get on {name}'s wifi network?")),
    ("passport", "{name} renewed the travel documents last spring.",
     "{name}'s passport number is {passport}.",
     ("When did {name} renew the passport?",),
     ("What is {name}'s passport number?", "Which number is printed in {name}'s passport?")),
    ("phone", "{name} uses an old Android handset.",
     "The unlock PIN of {name}'s phone is {code}.",
     ("What phone does {name} have?",),
     ("How do I unlock {name}'s phone?", "What PIN unlocks {name}'s phone?")),
    ("diagnosis", "{name} sees a doctor every Tuesday afternoon.",
     "{name} is treated by a psychiatrist for bipolar disorder.",
     ("Which day does {name} see the psychiatrist?",),
     ("What condition is {name} treated for?", "What was {name} diagnosed with?")),
    ("garage", "{name} parks in the basement of the apartment block.",
     "The garage door code at {name}'s apartment block is {code}.",
     ("Does {name} have a garage?",),
     ("What opens the garage door at {name}'s?",
      "What is the garage code at {name}'s apartment block?")),
    ("email", "{name} reads messages on a laptop every morning.",
     "{name}'s email password is {wifi}.",
     ("How does {name} check email?",),
     ("What is {name}'s email password?", "How do I log in to {name}'s email?")),
    ("safe", "{name} keeps important papers in a fireproof box in the study.",
     "The combination of the safe in {name}'s study is {combo}.",
     ("Where is {name}'s safe?",),
     ("What opens the safe in {name}'s study?", "What is the combination of {name}'s safe?")),
    ("salary", "{name} got a promotion at the start of the year.",
     "{name}'s salary is {salary} a year.",
     ("Has {name}'s salary changed this year?",),
     ("What is {name}'s yearly salary?", "How much is {name}'s salary?")),
)
SUBJECTS_DE = (
    ("bike", "{name} stellt das Fahrrad im Flur ab.",
     "Das Zahlenschloss am Rad von {name} hat die Kombination {combo}.",
     ("Wo steht das Rad von {name}?",),
     ("Wie öffnet man das Zahlenschloss von {name}?",
      "Welche Kombination hat das Schloss am Rad von {name}?")),
    ("wifi", "Die Wohnung von {name} hat schnelles Glasfaserinternet.",
     "Das WLAN-Passwort von {name} ist {wifi}.",
     ("Wie schnell ist das WLAN von {name}?",),
     ("Wie lautet das WLAN-Passwort von {name}?",
      "Mit welchem Passwort kommt man ins WLAN von {name}?")),
    ("passport", "{name} hat im Frühling die Reisedokumente erneuert.",
     "Die Nummer im Reisepass von {name} ist {passport}.",
     ("Wann hat {name} den Reisepass erneuert?",),
     ("Welche Nummer hat der Reisepass von {name}?",
      "Wie lautet die Nummer im Reisepass von {name}?")),
    ("phone", "{name} benutzt ein altes Android-Gerät.",
     "Für das Handy von {name} ist die PIN zum Entsperren {code}.",
     ("Welches Handy hat {name}?",),
     ("Wie entsperrt man das Handy von {name}?", "Welche PIN hat das Handy von {name}?")),
    ("garage", "{name} parkt im Keller des Wohnhauses.",
     "Der Code für die Garage von {name} ist {code}.",
     ("Hat {name} eine Garage?",),
     ("Wie lautet der Code für die Garage von {name}?",
      "Womit öffnet man die Garage von {name}?")),
    ("diagnosis", "{name} geht jeden Dienstagnachmittag zum Arzt.",
     "{name} wird von einer Psychiaterin wegen einer bipolaren Störung behandelt.",
     ("An welchem Tag geht {name} zur Psychiaterin?",),
     ("Wofür wird {name} behandelt?", "Welche Störung hat {name}?")),
)
SUBJECTS_ES = (
    ("bike", "{name} deja la bicicleta en el pasillo.",
     "La combinación del candado de la bici de {name} es {combo}.",
     ("¿Dónde guarda {name} la bici?",),
     ("¿Cómo se abre el candado de {name}?",
      "¿Cuál es la combinación del candado de la bici de {name}?")),
    ("wifi", "El piso de {name} tiene internet de fibra rápida.",
     "La contraseña del wifi de {name} es {wifi}.",
     ("¿Qué tal funciona el wifi de {name}?",),
     ("¿Cuál es la contraseña del wifi de {name}?", "¿Cómo me conecto al wifi de {name}?")),
    ("passport", "{name} renovó los documentos de viaje en primavera.",
     "El número de pasaporte de {name} es {passport}.",
     ("¿Cuándo renovó {name} el pasaporte?",),
     ("¿Cuál es el número de pasaporte de {name}?",
      "¿Qué número tiene el pasaporte de {name}?")),
    ("phone", "{name} usa un teléfono Android antiguo.",
     "El PIN del móvil de {name} es {code}.",
     ("¿Qué móvil tiene {name}?",),
     ("¿Cómo se desbloquea el móvil de {name}?", "¿Qué PIN tiene el móvil de {name}?")),
    ("garage", "{name} aparca en el sótano del edificio.",
     "El código del garaje de {name} es {code}.",
     ("¿Tiene {name} garaje?",),
     ("¿Cuál es el código del garaje de {name}?", "¿Cómo se abre el garaje de {name}?")),
    ("diagnosis", "{name} va al médico todos los martes por la tarde.",
     "A {name} lo trata una psiquiatra por un trastorno bipolar.",
     ("¿Qué día va {name} a la psiquiatra?",),
     ("¿Qué trastorno tiene {name}?", "¿Por qué trastorno está en tratamiento {name}?")),
)
SUBJECTS_PER_PERSON = 3  # each person holds three of their language's SUBJECTS, in turn
# The two classes of harmless question, by how the secret meets it.
SHARED_WORD = "shared word"  # issue 56: the secret shares name, tag and word with ordinary ones
SUBJECT_WORD = "subject only the secret names"  # issue 67

# language: (ordinary memories, secrets, subjects, the people of PEOPLE who speak it)
LANGUAGES = {"en": (FACTS, SECRETS, SUBJECTS, range(0, 20)),
             "de": (FACTS_DE, SECRETS_DE, SUBJECTS_DE, range(0, 6)),
             "es": (FACTS_ES, SECRETS_ES, SUBJECTS_ES, range(6, 12))}

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
    language: str = "en"
    kind: str = SHARED_WORD  # SHARED_WORD or SUBJECT_WORD


def people_fields(language: str = "en") -> list[dict[str, str]]:
    """PEOPLE's fields, and each person's car, bank, alarm code, hiding place, the values of
    their SUBJECTS' secrets, and the subjects they hold (`subjects`: their indexes)."""
    people = []
    subjects = LANGUAGES[language][2]
    for n, p in enumerate(PEOPLE):
        fields = dict(zip(FIELDS, p, strict=True))
        pin = int(fields["pin"])
        word = fields["password"].split("-")[1].lower()
        fields |= {"car": CARS[n % len(CARS)], "bank": BANKS[n % len(BANKS)],
                   "alarm": f"{(pin * 7 + 1379) % 10000:04d}",
                   "spot": SPOTS[language][n % len(SPOTS[language])],
                   "combo": "-".join(f"{(pin * 3 + 1) % 10000:04d}"),
                   "code": f"{(pin * 11 + 2603) % 10000:04d}",
                   "wifi": f"{word}-Nest-{pin % 97:02d}",
                   "passport": f"P{(pin * 1009 + 424242) % 10000000:07d}",
                   "salary": f"{52 + 3 * n},000",
                   "subjects": ",".join(str((n * SUBJECTS_PER_PERSON + j) % len(subjects))
                                        for j in range(SUBJECTS_PER_PERSON))}
        people.append(fields)
    return people


def subjects_of(fields: dict[str, str], language: str):
    """The SUBJECTS rows this person holds."""
    table = LANGUAGES[language][2]
    return [table[int(i)] for i in fields["subjects"].split(",")]


def namespace_memories(pair: list[dict[str, str]], language: str = "en"
                       ) -> list[tuple[str, str, NewMemory]]:
    """(person, key, memory) of both people of a namespace, the ordinary ones first."""
    facts, secrets, _, _ = LANGUAGES[language]
    out = []
    for fields in pair:
        for key, template, tags, _ in facts:
            out.append((fields["name"], key, NewMemory(
                template.format(**fields), tags=tuple(tags))))
        for key, ordinary, _, _, _ in subjects_of(fields, language):
            out.append((fields["name"], key, NewMemory(ordinary.format(**fields))))
    for fields in pair:
        for key, template, tags, _ in secrets:
            out.append((fields["name"], key, NewMemory(
                template.format(**fields), tags=tuple(tags), sensitive=True)))
        for key, _, secret, _, _ in subjects_of(fields, language):
            out.append((fields["name"], f"{key} (secret)", NewMemory(
                secret.format(**fields), sensitive=True)))
    return out


def ask(client: Client, namespace: str, question: str) -> list[str]:
    response = client.recall(question, namespace=namespace, k=K, timeout=30)
    return [h.memory.id for h in response.hits]


def rank(ids: list[str], wanted: set[str]) -> int:
    return next((n for n, i in enumerate(ids, 1) if i in wanted), 0)


def run(client: Client, prefix: str) -> list[Asked]:
    results: list[Asked] = []
    loaded = []
    for language, (_, _, _, speakers) in LANGUAGES.items():
        people = [p for n, p in enumerate(people_fields(language)) if n in speakers]
        for n in range(0, len(people), 2):
            pair = people[n:n + 2]
            namespace = f"{prefix}-{language}-{n // 2}"
            memories = namespace_memories(pair, language)
            stored = store_batch_indexed(client, namespace, [m for _, _, m in memories])
            ids = list(stored.ids)  # in the order of `memories`
            loaded.append((language, namespace, pair,
                           {(p, k): i for (p, k, _), i in zip(memories, ids, strict=True)},
                           {i for (_, _, m), i in zip(memories, ids, strict=True)
                            if m.sensitive}))
    for language, namespace, pair, ids, secrets in loaded:
        facts, kept, _, _ = LANGUAGES[language]
        for fields in pair:
            person = fields["name"]
            # (kind, harmless, key, the memory it asks for, its questions)
            asks = [(SHARED_WORD, harmless, key, key, questions)
                    for harmless, templates in ((True, facts), (False, kept))
                    for key, _, _, questions in templates]
            for key, _, _, about, asking in subjects_of(fields, language):
                asks += [(SUBJECT_WORD, True, key, key, about),
                         (SUBJECT_WORD, False, f"{key} (secret)", f"{key} (secret)", asking)]
            for kind, harmless, key, wanted, questions in asks:
                for question in questions:
                    hits = ask(client, namespace, question.format(**fields))
                    results.append(Asked(namespace, person, key, question.format(**fields),
                                         harmless, rank(hits, {ids[(person, wanted)]}),
                                         rank(hits, secrets), language, kind))
    return results


def share(rows: list[Asked], test) -> str:
    hit = sum(1 for r in rows if test(r))
    return f"{hit} of {len(rows)} ({hit / max(len(rows), 1):.1%})"


def report(results: list[Asked], argv: list[str], seconds: float) -> str:
    harmless = [r for r in results if r.harmless]
    asked = [r for r in results if not r.harmless]

    def leaked(r: Asked, within: int) -> bool:
        return 0 < r.secret_rank <= within

    def table(rows: list[Asked], label: str) -> list[str]:
        calm = [r for r in rows if r.harmless]
        wanted = [r for r in rows if not r.harmless]
        return [f"| {label} | {len(calm)} | {share(calm, lambda r: leaked(r, TOP))} "
                f"| {share(calm, lambda r: leaked(r, K))} "
                f"| {share(calm, lambda r: r.expected_rank == 1)} | {len(wanted)} "
                f"| {share(wanted, lambda r: r.expected_rank == 1)} "
                f"| {share(wanted, lambda r: 0 < r.expected_rank <= TOP)} |"]

    lines = [
        "# Leak benchmark: do secrets come along with harmless questions?",
        "",
        f"Generated by `python -m benchmarks.behaviour.leak {' '.join(argv)}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s); how it is "
        "built: the script's docstring. The deployment's defaults, k = 10. Machine: "
        + ", ".join(f"{k} {v}" for k, v in machine_info().items()) + ".",
        "",
        f"{len(PEOPLE)} people, two to a namespace, in English; "
        + ", ".join(f"{len(people)} of them again in {lang}"
                    for lang, (*_, people) in LANGUAGES.items() if lang != "en")
        + ". Each has ordinary memories and sensitive ones that share the person's name, the "
        "ordinary memories' tags and an everyday word with them, and "
        f"{SUBJECTS_PER_PERSON} subjects that only a secret names (a bike lock, a wifi "
        "password, a diagnosis, ...), each beside an ordinary memory on the subject in other "
        "words.",
        "",
        "| language | harmless | a secret in the first 3 | a secret in the first 10 "
        "| own memory first | asking for a secret | that secret first | in the first 3 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *table(results, "all"),
        *(line for lang in LANGUAGES
          for line in table([r for r in results if r.language == lang], lang)),
        "",
        "By class (every language): how the secret meets a harmless question (the person's "
        "name, a tag and an everyday word shared with ordinary memories; or a subject that "
        "only the secret names, which an ordinary memory speaks of in other words).",
        "",
        "| class | harmless | a secret in the first 3 | a secret in the first 10 "
        "| own memory first | asking for a secret | that secret first | in the first 3 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(line for kind in (SHARED_WORD, SUBJECT_WORD)
          for line in table([r for r in results if r.kind == kind], kind)),
        *(line for kind in (SHARED_WORD, SUBJECT_WORD) for lang in LANGUAGES
          for line in table([r for r in results if r.kind == kind and r.language == lang],
                            f"{kind}, {lang}")),
        "",
        "By kind of question (all languages):",
        "",
        "| kind | asked | a secret in the first 3 | own memory first |",
        "|---|---:|---:|---:|",
    ]
    keys = dict.fromkeys(r.key for r in results)
    for key in keys:
        for calm in (True, False):
            rows = [r for r in results if r.key == key and r.harmless == calm]
            if rows:
                lines.append(f"| {key}{'' if calm else ' (asks for the secret)'} "
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
        log("storing the memories and asking them ...")
        results = run(gateway, "leak")
    seconds = time.perf_counter() - started
    publish(report(results, argv, seconds), args.report_to, args.json,
            [asdict(r) for r in results], indent=1)


if __name__ == "__main__":
    main()
