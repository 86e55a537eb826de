"""German-speaking people of the agent-task set (format: see people_en.py)."""

DEV = [
    ("jonas", "Jonas", "m", """
food.diet | Jonas isst kein Fleisch, ab und zu aber Fisch.
food.allergy | Jonas verträgt keine Haselnüsse.
food.likes | Jonas liebt die vietnamesische Küche, vor allem Bún bò.
food.restaurant | Jonas mag Lokale, in denen man draußen sitzen kann.
food.drinks | Jonas trinkt keinen Alkohol, dafür gern Rhabarberschorle.
home.city,home.area | Jonas wohnt zur Miete in Ottensen, Hamburg.
home.flat | Jonas' Wohnung liegt im Erdgeschoss und hat einen kleinen Garten.
home.repair | Bei Jonas klemmt seit Wochen die Terrassentür; der Hausmeister heißt Herr Petersen.
work.role | Jonas ist Backend-Entwickler.
work.employer | Jonas arbeitet bei Kielwasser, einem Hamburger Start-up für Containerlogistik.
work.manager | Jonas' Teamleiterin ist Svenja Hoffmann.
work.project | Jonas baut gerade die neue Buchungsschnittstelle für Containerstellplätze.
work.hours,schedule.workdays | Jonas ist dienstags und donnerstags im Büro, sonst im Homeoffice.
tech.laptop | Jonas arbeitet auf einem ThinkPad X1 mit Arch Linux.
tech.software | Jonas programmiert in IntelliJ und schreibt seine Notizen in Logseq.
tech.prefs | Jonas stellt die Tastatur überall auf US-Layout um, auch am Firmenrechner.
tech.github | Jonas' GitHub-Handle ist jonas-hh.
tech.accounts | Jonas verwaltet seine Passwörter mit KeePassXC.
health.sport | Jonas rudert zweimal pro Woche auf der Alster.
health.condition | Jonas hat Heuschnupfen, im Mai besonders schlimm.
health.doctor | Jonas' Hausärztin ist Dr. Yılmaz in Altona.
family.partner | Jonas' Freund Malte ist Grundschullehrer.
family.parents | Jonas' Eltern wohnen in Husum und kommen selten nach Hamburg.
family.dates | Malte hat am 7. Juni Geburtstag.
family.friends | Jonas' Kumpel Deniz zieht im Sommer nach Wien.
travel.transport | Jonas nimmt lieber den Zug als das Flugzeug und hat eine BahnCard 50.
travel.likes | Jonas mag Dänemark und die Nordsee lieber als Südeuropa.
travel.style | Jonas bucht am liebsten Ferienwohnungen statt Hotels.
travel.trip | Jonas fährt Ende August mit Malte nach Kopenhagen.
"""),
    ("lena", "Lena", "f", """
food.diet | Lena ernährt sich vegan.
food.dislikes | Lena mag weder Koriander noch Oliven.
food.cooking | Lena kocht sonntags für die ganze Woche vor.
food.likes | Lena liebt indisches Essen, besonders Dal und Chana Masala.
home.city | Lena wohnt mit ihrer Familie in Giesing, München.
home.flat | Lenas Vierzimmerwohnung liegt im dritten Stock, es gibt einen Aufzug.
home.area | Lena schätzt, dass sie zu Fuß zum Tierpark Hellabrunn kommt.
work.role | Lena unterrichtet Mathematik und Sport an einem Gymnasium.
work.manager | Lenas Schulleiter ist Herr Brandl.
work.project | Lena organisiert im Juli die Klassenfahrt der 8b nach Berchtesgaden.
work.hours,schedule.workdays | Lena hat montags und freitags keinen Nachmittagsunterricht.
family.partner | Lenas Mann Stefan ist Tontechniker beim Bayerischen Rundfunk.
family.kids | Lena und Stefan haben eine Tochter, Mia, die in die zweite Klasse geht.
family.dates | Mia hat am 23. Juni Geburtstag und wünscht sich ein Fahrrad.
family.parents,schedule.weekly | Lenas Mutter wohnt in Rosenheim und holt Mia mittwochs von der
    Schule ab.
pets.pet | Die Familie hat einen Labrador namens Bruno.
pets.vet | Bruno ist bei der Tierarztpraxis Dr. Huber in Harlaching in Behandlung.
pets.care | Wenn die Familie verreist, kommt Bruno zu Lenas Mutter nach Rosenheim.
pets.food | Bruno hat eine Futtermittelallergie und bekommt nur Futter mit Insektenprotein.
health.sport | Lena geht zweimal pro Woche bouldern.
health.condition | Lena hat seit einem Skiunfall Probleme mit dem rechten Knie.
health.doctor | Lenas Physiotherapeutin heißt Frau Demir.
schedule.morning,health.sport | Lena steht um 5:45 auf, um vor der Schule joggen zu gehen.
schedule.weekly | Mia hat dienstags um 16 Uhr Schwimmkurs, Lena bringt sie hin.
schedule.quiet | Sonntagvormittag ist bei Lena Familienzeit, da wird nichts ausgemacht.
tech.laptop | Lena hat ein iPad für die Schule und zu Hause einen alten Windows-Laptop.
tech.github | Lenas GitHub-Handle ist lena-rechnet.
tech.software | Lena erstellt ihre Arbeitsblätter mit GeoGebra und Word.
tech.phone | Lena hat ein Fairphone 5.
"""),
    ("tobias", "Tobias", "m", """
food.diet,health.condition | Tobias achtet auf sein Cholesterin und isst kaum rotes Fleisch.
food.likes | Tobias liebt das türkische Essen in Ehrenfeld.
food.drinks | Tobias trinkt Kölsch, aber nur am Wochenende.
food.restaurant | Tobias mag Brauhäuser mit langen Holztischen.
home.city | Tobias wohnt in einer Altbauwohnung in Ehrenfeld.
home.repair | In Tobias' Küche tropft der Wasserhahn; die Vermieterin, Frau Schmitz, weiß Bescheid.
home.move | Tobias sucht eine größere Wohnung, weil seine Freundin zu ihm ziehen will.
work.role | Tobias ist Schadenssachbearbeiter bei einer Versicherung.
work.employer | Tobias arbeitet bei der Rheinland Assekuranz am Mediapark.
work.manager | Tobias' Chef heißt Herr Krämer.
work.hours,schedule.workdays | Tobias hat Gleitzeit und fängt meistens um 7 Uhr an.
hobbies.music | Tobias spielt Trompete in einer Karnevalskapelle.
hobbies.club | Tobias ist Mitglied in einem Karnevalsverein in Nippes.
hobbies.main | Tobias fotografiert Kölner Kirchen und lädt die Bilder auf Flickr hoch.
money.bank | Tobias hat sein Girokonto bei der Sparkasse KölnBonn.
money.savings | Tobias spart jeden Monat 200 Euro in einen ETF-Sparplan.
money.bills | Tobias' Abschlag für Strom und Gas wird am 15. abgebucht.
money.subs | Tobias hat ein Deutschlandticket und ein Netflix-Abo.
family.partner | Tobias' Freundin Laura ist Krankenpflegerin im Schichtdienst.
family.parents | Tobias' Vater ist herzkrank und wohnt in Bergisch Gladbach.
family.siblings | Tobias' Schwester Nina hat gerade ihr erstes Kind bekommen.
family.dates | Tobias' Vater wird am 3. Juli 75.
tech.laptop | Tobias hat privat ein MacBook Air.
tech.github | Tobias' GitHub-Handle ist tobi-koeln.
tech.phone | Tobias hat ein Samsung Galaxy A54.
tech.accounts | Tobias schreibt seine Passwörter leider in ein kleines Notizbuch.
health.condition | Tobias' Cholesterinwerte sind zu hoch; im Herbst wird neu gemessen.
health.sport | Tobias fährt mit dem Rennrad am Rhein entlang.
health.doctor | Tobias' Hausarzt ist Dr. Lehmann in Ehrenfeld.
"""),
    ("sabine", "Sabine", "f", """
food.diet | Sabine hat Zöliakie und isst streng glutenfrei.
food.likes | Sabine isst am liebsten Fisch, vor allem Zander.
food.cooking | Sabine backt ihr glutenfreies Brot selbst.
food.dislikes | Sabine mag kein scharfes Essen.
work.role | Sabine führt eine kleine Buchhandlung in der Leipziger Südvorstadt.
work.team | In Sabines Laden arbeiten zwei Aushilfen, Paula und Henrik.
work.project | Sabine plant für den Herbst eine Lesereihe mit Leipziger Autorinnen.
work.hours,schedule.workdays | Sabines Laden ist montags geschlossen.
home.city | Sabine wohnt in einem Reihenhaus in Leipzig-Connewitz.
home.flat | Zu Sabines Haus gehört ein großer Garten mit Apfelbäumen.
home.repair | Bei Sabine muss im Sommer die Heizung erneuert werden.
hobbies.main | Sabine gärtnert leidenschaftlich und zieht alte Tomatensorten.
hobbies.club | Sabine singt in einem Laienchor, der mittwochs probt.
hobbies.reading | Sabine liest vor allem skandinavische Krimis.
family.kids | Sabines Sohn Martin lebt mit seiner Familie in Dresden.
family.kids | Sabine hat zwei Enkel, Ole und Greta.
family.dates | Greta wird am 12. Juli sechs.
family.partner | Sabine ist geschieden und lebt allein.
travel.likes | Sabine fährt jeden Sommer an die Ostsee, am liebsten nach Usedom.
travel.transport | Sabine fährt ungern Autobahn und nimmt lieber den Zug.
travel.style | Sabine bucht immer dieselbe Pension in Ahlbeck.
travel.trip | Sabine will im September eine Flusskreuzfahrt auf der Donau machen.
health.condition | Sabine hat Arthrose in den Händen.
health.meds | Sabine nimmt Vitamin D und ein Mittel gegen Bluthochdruck.
health.doctor | Sabines Hausärztin ist Dr. Köhler.
tech.phone | Sabine hat ein iPhone SE und nutzt es vor allem für WhatsApp.
tech.laptop | In Sabines Laden steht ein Windows-PC für die Warenwirtschaft.
tech.github | Sabines GitHub-Handle ist sabine-liest.
tech.prefs | Sabine möchte große Schrift und einen hellen Bildschirm.
"""),
]

TEST = [
    ("katrin", "Katrin", "f", """
food.diet | Katrin ist Vegetarierin.
food.allergy | Katrin hat eine Laktoseintoleranz.
food.likes | Katrin isst am liebsten badisch, vor allem Flammkuchen.
food.restaurant | Katrin mag kleine Weinstuben am Kaiserstuhl.
work.role | Katrin ist Försterin im Freiburger Stadtwald.
work.project | Katrin lässt dieses Jahr 5.000 klimaresistente Eichen pflanzen.
work.hours,schedule.workdays | Katrin ist im Sommer ab 6 Uhr im Wald.
work.manager | Katrins Vorgesetzter im Forstamt ist Herr Gerber.
health.sport | Katrin fährt Mountainbike am Schauinsland.
health.condition | Katrin hatte letztes Jahr nach einem Zeckenstich Borreliose.
health.meds | Katrin braucht im Herbst eine Auffrischung der FSME-Impfung.
pets.pet | Katrin hat einen Deutsch Drahthaar namens Anton.
pets.care | Anton kann nicht allein bleiben, sonst jault er stundenlang.
pets.vet | Anton ist bei der Tierklinik in Merzhausen in Behandlung.
pets.food | Anton bekommt morgens und abends Nassfutter.
family.partner | Katrins Partnerin Jule ist Hebamme.
family.parents | Katrins Eltern haben ein Weingut am Kaiserstuhl.
family.dates | Jule und Katrin heiraten am 19. September.
tech.phone | Katrin hat ein robustes Outdoor-Handy von Cat.
tech.laptop | Katrin hat einen Dienstlaptop von Dell mit Windows.
tech.github | Katrins GitHub-Handle ist katrin-forst.
tech.software | Katrin zeichnet ihre Waldkarten in QGIS.
learning.language | Katrin lernt Französisch, weil sie viel mit Kollegen im Elsass zu tun hat.
learning.course | Katrin besucht donnerstags einen Französischkurs an der Volkshochschule.
learning.goal | Katrin möchte bis Ende des Jahres die DELF-B1-Prüfung ablegen.
home.city | Katrin wohnt in Freiburg-Wiehre.
home.flat | Katrins Dachwohnung wird im Sommer sehr heiß.
home.area | Katrin braucht zu Fuß nur zehn Minuten bis zur Dreisam.
"""),
    ("matthias", "Matthias", "m", """
food.diet | Matthias isst seit einem Jahr keinen Zucker mehr.
food.likes | Matthias liebt Sauerbraten mit guten Klößen.
food.dislikes | Matthias kann Fisch nicht ausstehen.
food.drinks | Matthias trinkt viel Kaffee, schwarz.
work.role | Matthias ist Prozessingenieur in einer Chipfabrik.
work.employer | Matthias arbeitet bei Elbsilizium in Dresden-Klotzsche.
work.hours,schedule.workdays | Matthias arbeitet im Vierschichtsystem.
work.project | Matthias betreut die Einführung einer neuen Belichtungsanlage.
home.city | Matthias wohnt in der Dresdner Neustadt.
home.flat | Matthias' Zweizimmerwohnung liegt im fünften Stock, ohne Aufzug.
home.move | Matthias will nächstes Jahr ein Haus in Radebeul kaufen.
family.partner | Matthias ist mit Yvonne verheiratet, die als Zahnärztin arbeitet.
family.kids | Matthias und Yvonne haben einen Sohn, Paul, der gerade laufen lernt.
family.parents | Matthias' Mutter lebt in Görlitz und hat keinen Führerschein.
family.dates | Yvonne hat am 28. Mai Geburtstag.
hobbies.main | Matthias baut Modelleisenbahnen in Spur H0.
hobbies.other | Matthias klettert in der Sächsischen Schweiz.
hobbies.reading | Matthias liest Science-Fiction, am liebsten Stanisław Lem.
money.bank | Matthias hat sein Konto bei der Ostsächsischen Sparkasse.
money.savings | Matthias spart auf das Eigenkapital für das Haus.
money.bills | Die Kitagebühren für Paul werden am Monatsanfang abgebucht.
money.budget | Matthias führt sein Haushaltsbuch in einer Excel-Tabelle.
tech.laptop | Matthias hat einen selbst gebauten PC und ein altes MacBook.
tech.github | Matthias' GitHub-Handle ist matze-dd.
tech.software | Matthias programmiert in seiner Freizeit in Python und Rust.
tech.phone | Matthias hat ein Google Pixel 8.
schedule.workdays | Matthias' Schichtplan wechselt alle zwei Wochen zwischen Früh, Spät und Nacht.
schedule.weekly,hobbies.other | Matthias hat donnerstags um 18 Uhr Kletterkurs.
schedule.quiet | Nach Nachtschichten schläft Matthias bis mittags und ist nicht erreichbar.
"""),
    ("anja", "Anja", "f", """
food.diet | Anja isst pescetarisch.
food.allergy | Anja ist gegen Sellerie allergisch.
food.likes | Anja liebt japanisches Essen.
food.drinks | Anja trinkt abends gern ein Glas Weißwein.
food.restaurant | Anja mag ruhige Restaurants, in denen man reservieren kann.
work.role | Anja ist Marketingleiterin.
work.employer | Anja arbeitet bei Hanseröster, einer Kaffeerösterei in der Überseestadt.
work.manager | Anjas Chef ist der Gründer, Carsten Wulff.
work.project | Anja plant für den Herbst die Markteinführung einer neuen Espressomischung.
travel.seat | Anja will im Flugzeug immer am Gang sitzen.
travel.airline | Anja fliegt meistens mit Lufthansa und hat Senator-Status.
travel.trip | Anja reist im Juni zu einer Kaffeefarm in Kolumbien.
travel.docs | Anjas Reisepass läuft im Januar ab.
travel.packing | Anja reist nur mit Handgepäck.
home.city | Anja wohnt im Bremer Viertel.
home.flat | Anjas Altbauwohnung hat hohe Decken, aber keinen Balkon.
home.repair | Anjas Waschmaschine ist kaputt; der Techniker kommt erst in zwei Wochen.
health.sport | Anja macht dreimal pro Woche Pilates.
health.sleep | Anja schläft schlecht, wenn sie nach 16 Uhr noch Kaffee trinkt.
health.condition | Anja hat Migräne.
tech.laptop | Anja hat ein MacBook Air und ein iPad Pro.
tech.github | Anjas GitHub-Handle ist anja-roestet.
tech.software | Anja arbeitet mit Canva und HubSpot.
tech.prefs | Anja hat fast alle Benachrichtigungen auf dem Handy abgeschaltet.
family.siblings | Anjas Bruder Timo lebt mit seinen zwei Kindern in Hamburg.
family.parents | Anjas Eltern wohnen in Oldenburg.
family.friends | Anjas beste Freundin Merle kennt sie seit der Grundschule.
family.dates | Merle feiert am 14. Juni ihren 40. Geburtstag.
"""),
]
