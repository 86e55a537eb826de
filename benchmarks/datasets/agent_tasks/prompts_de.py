"""German task prompts of the agent-task set (format: see prompts_en.py). {gen} is the
name's genitive (Lenas, Jonas')."""

DEV_TEMPLATES = """
food | request | food.diet food.allergy food.likes food.restaurant |
    Reservier für {name} einen Tisch zum Abendessen am Samstag.
food | planning | food.diet food.allergy food.likes food.dislikes food.cooking food.drinks |
    Stell mir eine Einkaufsliste für die nächste Woche zusammen.
food | question | food.diet food.allergy food.dislikes food.drinks |
    {name} kommt am Freitag zu uns. Was soll ich kochen, und was lasse ich besser weg?
food | request | food.diet food.allergy food.dislikes |
    Bestell das Mittagessen für den Workshop am Donnerstag, und zwar so, dass {name} auch
    etwas davon hat.
home | request | home.repair home.city |
    Such einen Handwerker, der diese Woche bei {name} vorbeikommen kann.
home | drafting | home.city home.area home.flat |
    Beschreib {gen} Bleibe und die Umgebung in ein paar Sätzen für eine Haustausch-Plattform.
home | planning | home.move home.flat home.city |
    Hilf {name} bei der Suche nach einem neuen Zuhause: Worauf sollten wir achten?
work | drafting | work.role work.employer work.project |
    Schreib eine kurze Vorstellung von {name} für die Konferenz-Webseite.
work | drafting | work.manager work.team |
    Entwirf eine Abwesenheitsnotiz für mich, ab Montag für zwei Wochen.
work | briefing | work.* |
    Gib der neuen Kollegin ein kurzes Briefing, wer {name} ist und was ((er|sie)) beruflich
    macht.
tech | setup | tech.laptop tech.software tech.prefs tech.accounts |
    Richte einen neuen Rechner für {name} ein.
tech | request | tech.github |
    Gib {name} Zugriff auf unser Code-Repository.
tech | question | tech.phone |
    Mein Handy spinnt schon wieder. Welches Modell hab ich noch mal?
health | planning | health.sport health.condition health.goal |
    Erstell einen Trainingsplan für {name} für die nächsten vier Wochen.
health | request | health.doctor |
    Mach für {name} einen Termin in der üblichen Praxis.
health | question | health.condition health.meds health.sleep |
    Woran sollte {name} beim nächsten Check-up denken?
family | planning | family.dates |
    Welche Geschenke muss {name} in den nächsten zwei Monaten besorgen?
family | question | family.partner family.parents family.siblings |
    Wen soll ich als Notfallkontakt angeben?
family | briefing | family.* |
    Ich lerne am Wochenende {gen} Leute kennen. Wer ist wer?
travel | planning | travel.likes travel.style travel.transport |
    Plan ein verlängertes Wochenende für {name}.
travel | planning | travel.trip travel.packing health.meds |
    Mach mir eine Packliste für die nächste Reise.
pets | drafting | pets.* |
    Schreib eine Anleitung für die Person, die nächste Woche {gen} Tier versorgt.
pets | request | pets.vet pets.pet |
    Vereinbare die jährliche Impfung für {gen} Vierbeiner.
schedule | request | schedule.* |
    Such nächste Woche einen Termin für ein einstündiges Gespräch mit {name}.
schedule | question | schedule.morning schedule.quiet schedule.weekly schedule.workdays |
    Wann erreiche ich {name} morgen am besten?
hobbies | recommending | hobbies.* |
    Empfiehl mir ein Geburtstagsgeschenk für {name}.
hobbies | planning | hobbies.* |
    Plan einen freien Samstag für {name}.
money | request | money.bills money.bank money.payment |
    Sorg dafür, dass alle Zahlungen von {name} diesen Monat pünktlich rausgehen.
money | planning | money.* |
    Stell für mich ein Monatsbudget auf.
"""

TEST_TEMPLATES = """
food | recommending | food.diet food.allergy food.likes food.restaurant |
    Such ein Lokal für das Teamessen mit {name} am Donnerstag aus.
food | question | food.diet food.allergy food.dislikes |
    Der Caterer fürs Sommerfest will wissen, was {name} nicht essen darf. Was sag ich ihm?
food | planning | food.diet food.allergy food.likes food.dislikes food.cooking |
    Überleg dir drei Gerichte für einen gemütlichen Abend bei mir zu Hause mit {name}.
home | request | home.repair home.city |
    Ruf einen Handwerksbetrieb an und schick jemanden zu {name}.
home | drafting | home.flat home.city home.area |
    Beschreib {gen} Zuhause für die Hausratversicherung.
home | planning | home.move home.flat |
    {name} will sich räumlich verändern. Mach eine Liste mit Kriterien für die Suche.
work | drafting | work.role work.employer work.project |
    Schreib zwei Sätze über {name} für das Programmheft der Tagung.
work | briefing | work.* |
    Ich treffe {name} morgen zum ersten Mal beruflich. Was sollte ich vorher wissen?
work | drafting | work.manager work.team |
    Ich bin krank. Formulier eine kurze Nachricht, wer mich vertritt.
health | planning | health.condition health.sport |
    Stell ein sanftes Bewegungsprogramm für {name} für den Sommer zusammen.
health | question | health.meds health.condition |
    Was gehört für {name} in die Reiseapotheke?
pets | request | pets.vet pets.pet |
    Kümmere dich um den nächsten Routinetermin für {gen} Tier.
pets | drafting | pets.* |
    Schreib für die Sitterin auf, was sie über {gen} Vierbeiner wissen muss.
family | planning | family.dates |
    Trag die wichtigen Termine aus {gen} Familie und Freundeskreis für den Sommer in den
    Kalender ein.
family | drafting | family.partner family.kids |
    Schreib ein paar Zeilen über {gen} Familie für den Weihnachtsrundbrief.
family | question | family.* |
    Wer gehört alles zu meinem engsten Kreis?
tech | setup | tech.laptop tech.software tech.prefs tech.accounts |
    {name} bekommt ein Ersatzgerät. Mach es startklar.
tech | request | tech.github |
    Lad {name} in unsere Organisation auf der Code-Plattform ein.
tech | question | tech.phone tech.laptop |
    Welche Geräte benutzt {name}? Ich will passende Ladekabel kaufen.
learning | planning | learning.* |
    Erstell einen Wochenplan zum Lernen für {name}.
learning | recommending | learning.* |
    Was könnte ich nebenher hören oder lesen, um schneller voranzukommen?
hobbies | recommending | hobbies.* |
    Such ein Dankeschön für {name} aus.
hobbies | planning | hobbies.* |
    Was könnte {name} an einem freien Sonntag Schönes unternehmen?
money | planning | money.budget money.savings |
    Hilf {name} auszurechnen, wie viel dieses Jahr für Urlaub drin ist.
money | request | money.bills money.bank |
    Geh {gen} feste Ausgaben für Juni durch.
schedule | request | schedule.* |
    Trag nächste Woche ein halbstündiges Telefonat mit {name} ein.
schedule | question | schedule.quiet schedule.workdays |
    Kann ich {name} am Dienstag früh anrufen?
travel | request | travel.seat travel.airline travel.docs travel.transport |
    Buch {name} die Flüge zur Messe in Lissabon.
travel | question | travel.trip travel.docs |
    Was muss ich vor der nächsten Auslandsreise noch erledigen?
travel | planning | travel.likes travel.style |
    {name} hat im Herbst eine Woche frei. Schlag was Schönes vor.
"""

DEV_NOTHING = """
general | Was ist die Hauptstadt von Kanada?
general | Wie viele Planeten hat unser Sonnensystem?
general | Wer hat den „Faust“ geschrieben?
general | Warum ist Meerwasser salzig?
arithmetic | Was ist 18 mal 24?
arithmetic | Wie viel sind 20 Prozent von 85?
arithmetic | Rechne 5 Meilen in Kilometer um.
writing | Schreib ein Haiku über den Herbst.
writing | Formuliere eine höfliche Absage auf die Anfrage eines Vertreters.
writing | Fass die Handlung von „Romeo und Julia“ in drei Sätzen zusammen.
writing | Übersetze „Wo ist der Bahnhof?“ ins Englische.
unstored | Welche Blutgruppe hat {name}?
unstored | Welche Schuhgröße hat {name}?
unstored | Was war {gen} erstes Auto?
unstored | Wie heißt {gen} Zahnarzt?
unstored | Was ist {gen} Lieblingsfarbe?
"""

TEST_NOTHING = """
general | Wie hoch ist die Zugspitze?
general | Wer hat die Relativitätstheorie entwickelt?
general | Welcher ist der längste Fluss Europas?
arithmetic | Wie viele Minuten liegen zwischen 8:40 und 11:15?
arithmetic | Was ist die Quadratwurzel aus 729?
arithmetic | Wenn ich jede Woche 40 Euro zurücklege, wie viel habe ich nach einem Jahr?
writing | Schreib ein kurzes Gedicht über den Regen.
writing | Formuliere „Das Meeting ist verschoben“ etwas förmlicher.
writing | Denk dir ein Rätsel aus, dessen Lösung „der Schatten“ ist.
unstored | Wie lautet {gen} Steuer-ID?
unstored | Was ist {gen} Lieblingsfilm?
unstored | An welcher Uni hat {name} studiert?
unstored | Wie groß ist {name}?
"""
