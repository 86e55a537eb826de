"""English-speaking people of the agent-task set: one hand-written memory table each.

Every line is `tags | text`: the first tag (`topic.aspect`) gives the memory's topic, further
tags (comma-separated) name other aspects the same memory also serves (a morning run is also a
morning commitment). An indented line continues the memory above it. Everything here is
invented for recallmesh; the people are fictional.
"""

DEV = [
    ("maya", "Maya", "f", """
food.diet | Maya is vegetarian on weekdays and eats fish at weekends.
food.allergy,health.meds | Maya is allergic to peanuts and carries an EpiPen.
food.likes | Maya's favourite cuisine is Ethiopian, injera with lentil stews above all.
food.restaurant | Maya prefers quiet places where she can hear people talk; loud bars are a no.
food.cooking | Maya bakes sourdough most Sundays and gives the spare loaves to her neighbours.
home.city,home.area | Maya rents a flat in Alfama, Lisbon.
home.flat | Maya's flat is on the fourth floor and the building has no lift.
home.repair | The kitchen tap at Maya's has dripped since March; the landlord, Mr Costa,
    promised to send someone.
home.move | Maya wants somewhere with a balcony when her lease ends in September.
work.role | Maya works as a UX researcher.
work.employer | Maya's employer is Mareva Pay, a payments start-up.
work.manager | Maya's manager is Rui Almeida.
work.project | Maya is leading research for the new checkout, due to go into production in June.
work.hours,schedule.workdays | Maya works from home on Mondays and Fridays.
health.sport,schedule.morning | Maya runs along the Tagus three mornings a week.
health.condition | Maya's left knee flares up after long hikes.
health.goal | Maya wants to run the Lisbon half marathon in October.
travel.seat | Maya always picks an aisle seat.
travel.packing | Maya travels with hand luggage only.
travel.likes | Maya loves small coastal towns and finds big resorts boring.
travel.transport | Maya prefers trains to planes for anything under six hours.
tech.laptop | Maya uses a 14-inch MacBook Pro for work.
tech.github | Maya's GitHub handle is maya-ok.
tech.prefs | Maya likes a light theme and a large font on every screen.
tech.accounts | Maya keeps her passwords in Bitwarden.
tech.software | Maya does her design work in Figma and keeps notes in Obsidian.
family.partner | Maya's partner, Inês, is a nurse who works night shifts.
family.friends | Maya's oldest friend Tom lives in Bristol and visits every spring.
family.dates | Maya's friend Tom turns 40 on 12 June.
family.parents,schedule.weekly | Maya's mother lives in Gothenburg and calls every Sunday evening.
hobbies.club | Maya's book club meets on the first Thursday evening of the month.
hobbies.music,schedule.weekly | Maya plays cello in an amateur orchestra that rehearses on
    Tuesday evenings.
hobbies.other | Maya collects old Portuguese tiles from flea markets.
schedule.quiet | Maya blocks Wednesday mornings for focused work and declines meetings then.
schedule.workdays | Maya starts at 8:30 and stops at 17:00 sharp.
schedule.evening | Maya doesn't look at messages after nine at night.
"""),
    ("daniel", "Daniel", "m", """
food.diet | Daniel has coeliac disease, so everything he eats has to be gluten-free.
food.likes | Daniel's go-to takeaway is Sichuan, the spicier the better.
food.dislikes | Daniel hates mushrooms in any form.
food.drinks | Daniel stopped drinking alcohol in January and now orders ginger beer.
home.city,home.area | Daniel lives in a terraced house in Chorlton, south Manchester.
home.flat | Daniel's house has a small back garden and a loft he uses as an office.
home.repair | The engineer who serviced Daniel's boiler in February said the pump is on its
    way out.
work.role | Daniel teaches chemistry at a secondary school in Stockport.
work.manager | Daniel's head of department is Mrs Okafor.
work.project | Daniel is writing the new Year 10 lab safety booklet this term.
work.hours,schedule.workdays | Daniel has to be at school by 7:45 and rarely leaves before 16:30.
health.sport | Daniel swims forty lengths at the leisure centre before school on Tuesdays
    and Thursdays.
health.condition | Daniel has mild asthma and keeps a blue inhaler in his coat.
health.meds | Daniel takes a daily antihistamine from April to August.
health.doctor | Daniel's GP is Dr Banerjee at the Beech Road surgery.
money.bank | Daniel banks with Nationwide and shares a joint account with his wife for the
    household.
money.bills | Daniel's council tax goes out by direct debit on the 1st; broadband is on the 15th.
money.savings | Daniel is saving for a new kitchen and puts £300 aside every month.
money.subs | Daniel pays for Spotify, Netflix and a cycling magazine he never reads.
pets.pet | Daniel has a rescue greyhound called Biscuit.
pets.care | Biscuit can't be left alone for more than four hours; the dog walker, Jess, charges
    £12 a walk.
pets.vet | Biscuit's vet is Chorlton Vets on Barlow Moor Road.
pets.food | Biscuit eats grain-free salmon kibble and gets a raw bone on Sundays.
tech.laptop,tech.software | Daniel's personal machine is a ThinkPad running Ubuntu.
tech.phone | Daniel has a Pixel 7 on an EE contract.
tech.github | Daniel's GitHub handle is dan-chem.
family.partner | Daniel's wife, Ruth, is a midwife.
family.kids | Daniel and Ruth have twin girls, Isla and Freya, who are seven.
family.dates | Isla and Freya's birthday is 3 July.
family.parents | Daniel's dad lives alone in Preston and doesn't drive any more.
learning.language | Daniel is learning Welsh on Duolingo and is on a 200-day streak.
learning.course | Daniel is doing an Open University module in environmental science.
learning.goal | Daniel wants the module finished by December, which would move him up a pay point.
"""),
    ("priya", "Priya", "f", """
food.diet | Priya doesn't eat beef or pork.
food.likes | Priya loves dosa and knows every South Indian café in Leeds.
food.allergy | Priya is lactose intolerant and reacts badly to cream sauces.
food.cooking | Priya meal-preps her lunches on Sunday afternoons.
food.restaurant | Priya likes restaurants that take reservations online; she won't queue.
work.role | Priya is a senior data engineer.
work.employer | Priya works for Harrowgate Foods, a supermarket chain headquartered in Leeds.
work.team | Priya's team looks after the pricing pipelines and is on call one week in four.
work.project | Priya is moving the nightly stock reports from Airflow to dbt.
work.manager | Priya reports to Callum Reid, the head of data.
tech.laptop | Priya's work machine is a Dell XPS 15 with Windows 11 and WSL.
tech.software | Priya writes code in VS Code with the Vim extension.
tech.prefs | Priya wants a dark theme everywhere and the keyboard set to UK layout.
tech.github | Priya's GitHub handle is priya-dataops.
tech.accounts | Priya uses 1Password and a YubiKey for two-factor.
travel.seat | Priya asks for a window so she can sleep on flights.
travel.airline | Priya collects Avios with British Airways.
travel.docs | Priya's passport expires in November 2026.
travel.trip | Priya is going to Kochi for her cousin's wedding in August.
travel.likes | Priya likes city breaks with good museums more than beach holidays.
family.siblings | Priya's younger brother Arjun is at university in Glasgow.
family.parents | Priya's parents live in Leicester and she visits once a month.
family.dates | Priya's parents' 35th wedding anniversary is on 18 September.
family.friends | Priya's best friend Sophie is getting married next spring and asked Priya to be
    a bridesmaid.
hobbies.main | Priya plays in a badminton league on Wednesday nights.
hobbies.other | Priya is knitting a jumper for her brother, very slowly.
hobbies.reading | Priya reads mostly crime novels, ideally ones set in Scandinavia.
money.budget | Priya keeps to £250 a month for eating out.
money.savings | Priya is saving for a deposit on a flat and has an ISA for it.
money.payment | Priya pays for everything by card and never carries cash.
money.bills | Priya's rent of £950 leaves her account on the 28th.
"""),
    ("owen", "Owen", "m", """
food.diet | Owen is vegan.
food.dislikes | Owen can't stand olives or anything pickled.
food.drinks | Owen drinks oat flat whites, two a day and never after 2 pm.
food.cooking | Owen makes a big pot of dal every Monday to last the week.
home.city | Owen lives in Canton, Cardiff, above a bike shop.
home.flat | Owen's flat has one bedroom and a box room he uses as a darkroom.
home.move | Owen's landlord is selling, so Owen has to be out by the end of July.
work.role | Owen is a freelance photographer who mostly shoots weddings and product catalogues.
work.employer,work.project | Owen's biggest client is Tŷ Gwyn, a furniture brand whose spring
    catalogue he is shooting.
work.hours,schedule.workdays | Owen keeps Mondays free of shoots for editing.
health.sport | Owen cycles everywhere and does a 60 km ride in the Vale of Glamorgan most Sundays.
health.condition | Owen broke his wrist last year and still can't do push-ups.
health.sleep | Owen sleeps badly and falls asleep to a white-noise app.
hobbies.music | Owen sings bass in a male voice choir.
hobbies.other | Owen restores old film cameras and sells them online.
hobbies.reading | Owen is working through the Discworld novels in order.
pets.pet | Owen has two cats, Pixel and Negative.
pets.food | Pixel is on a prescription kidney diet; Negative eats anything.
pets.care | Owen's neighbour Gareth feeds the cats when Owen is away.
tech.laptop | Owen edits on a Mac Studio with a calibrated BenQ monitor.
tech.software | Owen uses Lightroom Classic and Capture One.
tech.github | Owen's GitHub handle is owen-lens.
tech.accounts | Owen backs up every shoot to two external drives and Backblaze.
money.payment | Owen invoices clients on the last Friday of the month with 30-day terms.
money.budget | Owen sets aside a quarter of every payment for his tax bill.
money.bank | Owen uses Starling for the business and Monzo for himself.
money.bills | Owen's self-assessment tax payment is due on 31 July.
family.siblings | Owen's sister Megan lives in Swansea with her two boys.
family.dates | Owen's nephew Rhys turns five on 22 May.
family.parents | Owen's mum, Carys, has just retired from teaching.
"""),
    ("grace", "Grace", "f", """
food.diet | Grace follows a low-FODMAP diet on her dietitian's advice.
food.allergy | Grace is allergic to shellfish.
food.likes | Grace's comfort food is her grandmother's jollof rice.
food.restaurant | Eating out alone, Grace would rather sit at the bar counter than at a table.
food.drinks | Grace drinks only decaf after noon.
work.role | Grace is an employment lawyer.
work.employer | Grace is an associate at Whitmore & Lang in downtown Toronto.
work.manager | Grace's supervising partner is Helen Brandt.
work.project | Grace is preparing for a tribunal hearing in early June.
work.hours | Grace bills in six-minute units against a target of 1,800 hours a year.
health.sport | Grace does hot yoga twice a week near Queen Street.
health.condition | Grace gets migraines when she skips meals or sleeps too little.
health.meds | Grace takes sumatriptan as soon as a migraine starts.
health.doctor | Grace's family doctor is Dr Lum at the Bathurst clinic.
travel.seat | Grace wants an aisle near the front of the plane.
travel.airline | Grace flies Air Canada and has Aeroplan 50K status.
travel.style | Grace likes boutique hotels and hates shared bathrooms.
travel.trip | Grace is visiting Accra in December for her aunt's 70th.
travel.docs | Grace holds both Canadian and Ghanaian passports.
tech.phone | Grace has an iPhone 15 and an Apple Watch.
tech.laptop | Grace's firm issued her a Surface Pro.
tech.github | Grace's GitHub handle is grace-esq.
tech.prefs | Grace dictates most emails and wants voice typing on by default.
family.partner | Grace's fiancé, Tunde, is an architect.
family.dates | Grace and Tunde's wedding is planned for 14 August 2027.
family.siblings | Grace has two older brothers, Kofi and Yaw.
family.friends | Grace's friend Aimee from law school is moving to Vancouver this summer.
schedule.morning | Grace is up at 5:30 and answers emails before 7.
schedule.quiet | Grace never takes calls on a Sunday; it's family day.
schedule.weekly,family.parents | Grace has lunch with her mother every Friday.
"""),
    ("samuel", "Samuel", "m", """
food.diet | Samuel is eating less meat: no red meat, and chicken twice a week at most.
food.likes | Samuel's favourite food is a proper Sunday roast.
food.dislikes | Samuel won't eat anything with raw onion.
food.cooking | Samuel can cook exactly three dishes and orders in the rest of the time.
home.city | Samuel shares a house in Phibsborough, Dublin, with two housemates.
home.flat | Samuel has the small back room, where a double bed barely fits.
home.area | Samuel likes that Croke Park is a short walk from the house.
home.repair | The shower in Samuel's house loses pressure every winter.
work.role | Samuel is a civil engineer who designs cycle lanes.
work.employer | Samuel works in the transport department of Dublin City Council.
work.manager | Samuel's boss is Aoife Brennan.
work.project | Samuel is designing the new lane along the quays, planned to open next spring.
health.sport | Samuel plays hurling for his club on Saturdays and trains on Wednesday evenings.
health.condition | Samuel's right hamstring tears easily; no sprinting for a month, says the physio.
health.doctor | Samuel's physio is Niamh at the Drumcondra clinic.
money.bills | Samuel and the housemates split the electricity three ways over Revolut.
money.savings | Samuel wants €10,000 saved by the end of the year.
money.subs | Samuel pays for the GAA+ streaming service and Duolingo Plus.
money.budget | Samuel spends too much on taxis and promised himself a €60 monthly cap.
learning.language | Samuel is brushing up his Irish for a council language exam.
learning.course | Samuel goes to an Irish class at Conradh na Gaeilge on Monday nights.
learning.goal | Samuel needs a B2 Irish certificate by October for a promotion.
tech.phone | Samuel's phone is an old Samsung with a cracked screen.
tech.laptop,tech.software | Samuel runs AutoCAD on an HP workstation the council gave him.
tech.github | Samuel's GitHub handle is sam-quays.
family.parents | Samuel's parents run a B&B in Dingle.
family.siblings | Samuel's sister Orla is a nurse in Perth, Australia.
family.dates | Samuel's mother's birthday is on 30 May; she likes anything for the garden.
family.friends | Samuel's friend Ciarán is organising a stag weekend in Galway for June.
"""),
    ("hannah", "Hannah", "f", """
food.diet | Hannah is pescatarian.
food.allergy | Hannah is allergic to kiwi and sesame.
food.restaurant | Hannah likes small-plates places and asks to sit away from the door.
food.likes | Hannah is obsessed with Georgian food, khachapuri especially.
home.city | Hannah owns a tenement flat in Marchmont, Edinburgh.
home.flat | Hannah's flat is up four flights of narrow stairs, so furniture has to be flat-pack.
home.repair | Lowther & Co, the factor, is fixing a roof leak above Hannah's bedroom.
home.area | Hannah loves living next to the Meadows.
work.role | Hannah is a curator of textiles at a national museum.
work.project | Hannah is putting together an exhibition on Shetland knitting that opens in
    November.
work.team | Hannah works with two conservators, Fiona and Raj.
work.hours,schedule.workdays | Hannah works Tuesday to Saturday.
schedule.morning | Hannah is not a morning person and does nothing important before ten.
schedule.weekly | Hannah volunteers at a food bank on Monday afternoons.
schedule.quiet | Hannah keeps Sundays completely free.
hobbies.main | Hannah knits obsessively and designs her own patterns.
hobbies.other | Hannah swims in the sea at Portobello all year round.
hobbies.club | Hannah sings in a folk choir that performs at the Fringe.
hobbies.music | Hannah plays the fiddle, badly, she says.
pets.pet | Hannah has an elderly dachshund called Strudel.
pets.vet | Strudel has a bad back and sees a veterinary physio every fortnight.
pets.care | Strudel can't manage stairs, so he has to be carried up.
pets.food | Strudel is on a weight-loss diet of 80 g of food a day.
tech.laptop | Hannah uses an iPad with a keyboard case instead of a computer.
tech.github | Hannah's GitHub handle is hannah-knits.
tech.software | Hannah writes her exhibition texts in Scrivener.
tech.accounts | Hannah's passwords live in Apple's keychain.
travel.transport | Hannah doesn't fly for environmental reasons and takes the train everywhere.
travel.likes | Hannah loves the Nordic countries and goes to the Faroes when she can.
travel.style | Hannah prefers self-catering cottages to hotels.
"""),
    ("leo", "Leo", "m", """
food.dislikes | Leo refuses to eat offal.
food.likes | On his days off Leo wants simple food: pho, burgers, a good pie.
food.drinks | Leo drinks long blacks, and a natural wine or two on a Sunday.
food.cooking | Leo barely cooks at home; the kitchen at work is enough, he says.
work.role | Leo is sous-chef at Ember, a wood-fired restaurant in Fitzroy.
work.hours,schedule.workdays | Leo works Wednesday to Sunday, from 2 pm till close.
work.manager | Leo's head chef is Bianca Russo.
work.project | Leo is writing the new winter menu, which launches on 1 June.
health.condition | Leo has chronic lower-back pain from long shifts.
health.sport | Leo surfs at Torquay on Mondays when the swell is good.
health.goal | Leo wants to quit smoking before he turns 35 in September.
health.doctor | Leo sees an osteopath, Dr Nguyen, every three weeks.
home.city | Leo lives in a share house in Brunswick, Melbourne.
home.area | Leo's street is on the 19 tram line.
home.move | Leo and his girlfriend are looking for a place together in Northcote.
family.partner | Leo's girlfriend, Sienna, is a primary school teacher.
family.parents | Leo's parents live in Bendigo; his dad had a knee replacement in March.
family.dates | Sienna's birthday is on 9 August.
tech.phone | Leo has an iPhone 12 whose battery is flat by the evening.
tech.github | Leo's GitHub handle is leo-ember.
tech.software | Leo keeps recipes and costings in a Notion workspace.
tech.laptop | Leo doesn't own a computer, just an old iPad.
money.bank | Leo banks with ING and keeps a separate account for the rental bond.
money.savings | Leo and Sienna are saving for the bond and moving costs.
money.bills | Leo's car registration is due in July.
money.subs | Leo pays for Stan and a surf forecast app.
hobbies.main | Leo collects vinyl, mostly soul and funk.
hobbies.other | Leo DJs at a friend's bar once a month.
hobbies.reading | Leo reads cookbooks in bed like novels.
"""),
    ("chloe", "Chloe", "f", """
food.diet | Chloe has been vegetarian since she was twelve.
food.allergy | Chloe is allergic to tree nuts but fine with peanuts.
food.dislikes | Chloe thinks coriander tastes of soap.
food.cooking | Chloe batch-cooks on her days off because her shifts are long.
work.role | Chloe is a junior doctor in emergency medicine at Southmead Hospital.
work.hours,schedule.workdays | Chloe's rota changes monthly; she is on nights in the second week
    of June.
work.manager | Chloe's educational supervisor is Dr Adeyemi.
work.project | Chloe is writing up an audit of sepsis screening as a conference poster.
health.sport | Chloe goes bouldering at an indoor wall twice a week.
health.sleep | Chloe sleeps with blackout blinds and earplugs after night shifts.
health.condition | Chloe has an underactive thyroid.
health.meds | Chloe takes levothyroxine every morning on an empty stomach.
home.city | Chloe rents a flat in Bishopston, Bristol.
home.flat | Chloe's flat is small, so guests sleep on the sofa bed.
home.area | Chloe can cycle to the hospital in fifteen minutes.
travel.likes | Chloe likes hiking holidays: the Dolomites, Snowdonia, the Lake District.
travel.style | Chloe's holidays are fitted around her rota and usually last a week.
travel.trip | Chloe is going to the Dolomites for the first week of September.
travel.seat | Chloe is 1.85 m tall and always pays extra for legroom.
tech.phone | Chloe has a Samsung Galaxy S23.
tech.software | Chloe uses Anki for revision and Zotero for papers.
tech.github | Chloe's GitHub handle is chloe-ed.
tech.laptop | Chloe's MacBook Air is five years old and she wants to replace it.
learning.course | Chloe is studying for the MRCEM exam.
learning.goal | Chloe's exam date is 17 October.
learning.reading | Chloe listens to the St Emlyn's podcast on her commute.
family.siblings | Chloe's twin brother, Sam, lives in Brighton.
family.dates | Chloe and Sam's birthday is 2 November.
family.parents | Chloe's parents, Jan and Pete, live in Norwich.
family.friends | Chloe's university housemate Tash is expecting a baby in July.
"""),
    ("marcus", "Marcus", "m", """
food.diet | Marcus is on a high-protein diet while he's bulking.
food.likes,food.restaurant | Marcus's favourite place is a Korean barbecue joint in Lincoln
    Square.
food.restaurant | Marcus prefers restaurants he can walk to from the Brown Line.
food.dislikes | Marcus doesn't like spicy food at all.
food.drinks | Marcus drinks bourbon, but only at weekends.
work.role | Marcus is a product manager for a logistics app.
work.employer | Marcus works at Freightly, a trucking software company in the Loop.
work.team | Marcus's squad has six engineers and a designer, Lauren.
work.project | Marcus is shipping a route-planning feature to production next month.
work.manager | Marcus reports to Dev Malhotra, the VP of product.
health.sport | Marcus lifts weights five times a week at a gym on Damen.
health.goal | Marcus wants to bench 100 kg by the end of summer.
health.condition | Marcus had shoulder surgery two years ago and avoids overhead pressing.
tech.laptop | Marcus uses a MacBook Pro with two external monitors.
tech.software | Marcus lives in Jira, Linear and Figma.
tech.phone | Marcus has a Pixel Fold.
tech.github | Marcus's GitHub handle is marcus-ships.
tech.prefs | Marcus wants notifications off except for the calendar and Slack DMs.
money.budget | Marcus tracks his spending in YNAB.
money.savings | Marcus maxes out his 401(k) and has a separate fund for a house.
money.bills | Marcus's rent and renter's insurance are due on the 1st.
money.payment | Marcus pays friends back through Venmo.
family.siblings | Marcus's sister Tasha lives in Atlanta with her husband.
family.parents | Marcus's dad, Reggie, is a retired bus driver who loves the Cubs.
family.dates | Marcus's dad turns 70 on 4 July.
family.kids | Marcus's daughter Zoe is nine and lives with her mum in Evanston every other week.
schedule.weekly | Marcus has Zoe every other week, from Sunday evening to the next Sunday.
schedule.quiet | Marcus keeps Thursday afternoons free of meetings for roadmap work.
schedule.morning,health.sport | Marcus is at the gym by six and online by eight.
"""),
    ("aisha", "Aisha", "f", """
food.diet | Aisha eats halal and doesn't drink alcohol.
food.likes | Aisha loves Lebanese mezze and anything with pomegranate.
food.allergy | Aisha is allergic to eggs.
food.restaurant | Aisha likes places with booths and gets uncomfortable in crowded rooms.
home.city | Aisha lives in Walthamstow, London.
home.flat | Aisha's flat is a ground-floor conversion with a garden.
home.repair | Aisha has damp in the bathroom and is waiting for a surveyor.
work.role | Aisha is a chartered accountant who specialises in charity audits.
work.employer | Aisha is a manager at Pryce Halden LLP.
work.hours,schedule.workdays | Aisha works compressed hours: four long days, with Fridays off.
work.project | Aisha's busiest months are January to March, when year-end audits close.
money.bank | Aisha banks with Monzo and keeps her savings with Chase.
money.savings | Aisha is saving for Hajj next year.
money.bills | Aisha's car insurance renews on 12 June.
money.budget | Aisha sticks to a strict 50/30/20 split of her income.
money.subs | Aisha pays for Audible and for a gym she rarely goes to.
learning.language | Aisha is learning Arabic with a tutor over Zoom.
learning.course | Aisha's Arabic lessons are on Tuesday and Thursday evenings.
learning.goal | Aisha wants to read classical Arabic texts without a dictionary.
tech.laptop | Aisha's work machine is locked down, so she uses her own Lenovo for personal things.
tech.phone | Aisha has an iPhone 14 Pro.
tech.github | Aisha's GitHub handle is aisha-ledger.
tech.software | Aisha does all her personal finances in Excel.
family.parents | Aisha's mother has lived with her since her father passed away.
family.siblings | Aisha has three younger sisters; the youngest, Safa, is at sixth-form college.
family.dates | Safa's graduation is on 18 July.
family.siblings | Aisha babysits her nephew Yusuf on Saturdays.
hobbies.main | Aisha does calligraphy and sells prints at craft fairs.
hobbies.reading | Aisha is reading her way through the Booker shortlist.
hobbies.other | Aisha goes to a Saturday morning run club in Lloyd Park.
"""),
    ("ethan", "Ethan", "m", """
food.diet | Ethan is trying to cut out dairy.
food.likes | Ethan likes sushi and ramen more than anything.
food.dislikes | Ethan can't stand cilantro.
food.drinks | Ethan gets through a lot of cold brew.
tech.laptop | Ethan's daily driver is a Framework running Fedora.
tech.software | Ethan uses Neovim, tmux and zsh, configured from a long dotfiles repo.
tech.prefs | Ethan types on Colemak and wants it set on every machine.
tech.github | Ethan's GitHub handle is ethan-ok.
tech.accounts | Ethan keeps his SSH keys on a YubiKey and his secrets in pass.
tech.phone | Ethan has a Pixel running GrapheneOS.
work.role | Ethan is a site reliability engineer.
work.employer | Ethan works at Cascadia Cloud, a hosting company.
work.team | Ethan's team rotates on call, one week in five.
work.project | Ethan is migrating the production databases to a new cluster this quarter.
health.sport | Ethan runs trails on Tiger Mountain at weekends.
health.condition | Ethan has plantar fasciitis in his left foot.
health.goal | Ethan signed up for a 50 km trail race in October.
health.sleep | On-call weeks wreck Ethan's sleep, so he naps after lunch.
pets.pet | Ethan has a border collie called Linux.
pets.care | Linux goes to doggy daycare on Tuesdays and Thursdays.
pets.vet | Linux's vet is Fremont Animal Hospital.
pets.food | Linux eats raw food that's delivered monthly.
travel.style | Ethan prefers camping and cabins to hotels.
travel.likes | Ethan loves national parks and wants to visit all 63.
travel.trip | Ethan is driving to Glacier National Park in late July.
travel.transport | Ethan drives a Subaru Outback with a roof box.
home.city | Ethan owns a small house in Ballard, Seattle.
home.repair | Ethan's gutters need clearing every autumn.
home.flat | Ethan's house has a basement office and a fenced yard.
"""),
]

TEST = [
    ("nora", "Nora", "f", """
food.diet | Nora avoids dairy; it gives her stomach aches.
food.likes | Nora's favourite treat is a lobster roll from a shack in Maine.
food.allergy | Nora is allergic to strawberries.
food.restaurant | Nora only eats out early, before 6 pm, because she starts baking at 4 am.
food.drinks | Nora drinks black tea all day and never coffee.
work.role | Nora owns a small bakery in Jamaica Plain called Crumb & Co.
work.team | Nora has three staff; Luis runs the counter and is her deputy.
work.project | Nora is opening a second shop in Roslindale in the autumn.
work.hours,schedule.workdays | Nora bakes from 4 am and closes the shop at 2 pm.
money.bills | Nora's flour supplier invoices on the 10th and the shop's lease is due on the 1st.
money.bank | Nora's business account is with Eastern Bank.
money.savings | Nora is putting money aside for the new shop's ovens.
money.payment | Nora pays her suppliers by bank transfer and hates card fees.
family.kids | Nora has a son, Finn, who is four and in preschool.
family.partner | Nora's husband, Patrick, is a firefighter on 24-hour shifts.
family.parents | Nora's mother, Deirdre, picks Finn up from preschool on Wednesdays.
family.dates | Finn turns five on 28 June.
schedule.morning | Nora goes to bed at 8:30 pm and is up at 3:30.
schedule.evening | Nora won't answer messages after 7 pm.
schedule.weekly | The shop is closed on Mondays, Nora's only day off.
health.condition | Nora has carpal tunnel in her right wrist from kneading.
health.doctor | Nora's physical therapist is at Spaulding in Charlestown.
health.sleep | Nora naps at 3 pm most days.
tech.phone | Nora runs the shop from an old iPad and her Android phone.
tech.software | Nora takes payments with Square and does her books in QuickBooks.
tech.github | Nora's GitHub handle is nora-crumb.
pets.pet | Nora has a ginger cat called Brioche.
pets.vet | Brioche is due for her vaccinations in June.
pets.food | Brioche is fed twice a day and is fussy about brands of wet food.
"""),
    ("felix", "Felix", "m", """
food.diet | Felix is a strict vegan, honey included.
food.likes | Felix lives on Thai green curry and tofu.
food.dislikes | Felix dislikes bitter greens like kale.
food.cooking | Felix is a keen fermenter: kimchi, sauerkraut, hot sauce.
home.city,home.area | Felix rents a flat in Kemptown, Brighton, two streets from the sea.
home.flat | Felix soundproofed the spare room of his flat to record in.
home.repair | A window in Felix's flat won't close properly; he has asked the letting agent
    twice.
home.move | Felix's tenancy ends in October and the rent is going up by 15%.
work.role | Felix is a sound engineer for podcasts and audiobooks.
work.employer | Felix is freelance; his biggest client is Tidewater Audio.
work.project | Felix is mixing a 12-episode true-crime series due in July.
hobbies.music | Felix plays bass in a post-punk band called Salt Marsh.
hobbies.main | Felix's band has a gig at the Prince Albert on 21 June.
hobbies.other | Felix skateboards along the seafront on Sunday mornings.
health.condition | Felix has tinnitus in his left ear and wears earplugs at gigs.
health.doctor | Felix sees an audiologist at the Royal Sussex every six months.
health.sport | Felix swims in the sea from May to October.
tech.laptop | Felix mixes on a MacBook Pro with an Apollo interface.
tech.software | Felix records in Reaper and cleans up audio with iZotope RX.
tech.github | Felix's GitHub handle is felix-saltmarsh.
tech.accounts | Felix stores client files on a Synology NAS at home.
money.bills | Felix's tax return is always late; his accountant is Meera at Brightside Accounts.
money.payment | Felix invoices through FreeAgent.
money.budget | Felix allows himself £40 a week of spending money.
travel.transport | Felix doesn't drive; he takes trains and coaches.
travel.likes | Felix loves Berlin and goes every winter for the music scene.
travel.style | Felix stays in hostels or with friends, never in chain hotels.
"""),
    ("imogen", "Imogen", "f", """
food.diet,health.condition | Imogen has to keep salt low because of her blood pressure.
food.likes | Imogen adores French bistro cooking.
food.drinks | Imogen has a glass of red on Fridays and sparkling water otherwise.
food.restaurant | Imogen likes restaurants with tablecloths and no music.
work.role | Imogen is a lecturer in medieval history.
work.employer | Imogen teaches at St Hilda's College, Oxford.
work.project | Imogen is finishing a book on fourteenth-century pilgrim routes; the manuscript is
    due in September.
work.team | Imogen's co-editor is Professor Anselm Weber in Heidelberg.
work.hours,schedule.workdays | Imogen teaches tutorials on Tuesday and Wednesday mornings in term.
health.condition | Imogen has high blood pressure.
health.meds | Imogen takes amlodipine every evening.
health.doctor | Imogen's GP is Dr Faulkner at Summertown Health Centre.
health.sport | Imogen walks five miles along the Thames path every day.
travel.likes | Imogen loves Italian hill towns and monasteries.
travel.docs | Imogen has a British passport and an Italian residence card from her years in
    Bologna.
travel.seat | Imogen avoids flying if she can, and when she can't, she wants an aisle.
travel.trip | Imogen is going to a conference in Santiago de Compostela in July.
family.partner | Imogen's husband, Giles, is a retired architect.
family.kids | Imogen's grown-up son, Hugo, lives in Singapore.
family.dates | Imogen and Giles celebrate their 30th anniversary on 2 August.
family.friends | Imogen's old friend Beatrice is visiting from Rome in June.
pets.pet | Imogen and Giles have a cocker spaniel called Bede.
pets.care | When they travel, Bede stays with Giles's brother in Witney.
pets.vet | Bede's vet is in Summertown; he needs his booster in July.
tech.laptop | Imogen writes on an old Windows laptop that she refuses to upgrade.
tech.software | Imogen works in Word with track changes and hates Google Docs.
tech.github | Imogen's GitHub handle is imogen-pilgrim.
tech.phone | Imogen has a basic Nokia and reads email only on her laptop.
"""),
    ("kwame", "Kwame", "m", """
food.diet,health.condition | Kwame is cutting down on sugar after a prediabetes warning.
food.likes | Kwame's favourite meal is waakye with shito.
food.cooking | Kwame does the cooking at weekends; his partner does weekdays.
food.dislikes | Kwame can't eat anything too creamy.
home.city | Kwame lives in a semi-detached house in Moseley, Birmingham.
home.flat | Kwame's house has three bedrooms and a driveway for one car.
home.repair | Kwame's garden fence blew down in the February storms and still needs replacing.
work.role | Kwame is an IT support technician at Queen Elizabeth Hospital.
work.hours,schedule.workdays | Kwame works a rota of early and late shifts, with every third
    weekend on.
work.manager | Kwame's team leader is Sandra Poole.
work.project | Kwame is rolling out new laptops to the outpatient clinics.
health.condition | Kwame's blood sugar is borderline and is to be rechecked in six months.
health.sport | Kwame plays five-a-side football on Thursday nights.
health.doctor | Kwame's GP surgery is Moseley Medical Centre.
health.goal | Kwame wants to lose 8 kg before his sister's wedding.
family.partner | Kwame's partner, Abena, is a pharmacist.
family.kids | Kwame and Abena have two sons, Kojo (10) and Kweku (6).
family.siblings | Kwame's sister Efua is getting married in Kumasi in December.
family.dates | Kojo's birthday is on 15 June and he wants a football party.
tech.laptop | At home Kwame has a gaming PC he built himself.
tech.phone | Kwame has a OnePlus on a SIM-only plan.
tech.github | Kwame's GitHub handle is kwame-fixes.
tech.prefs | Kwame wants everything in dark mode and hates automatic updates.
money.bills | Kwame's mortgage payment leaves on the 5th.
money.savings | Kwame is saving for the family's flights to Ghana in December.
money.budget | Kwame and Abena keep the household budget in a shared spreadsheet.
learning.course | Kwame is studying for the CompTIA Security+ certification.
learning.goal | Kwame hopes Security+ will get him into a cyber-security role.
learning.reading | Kwame watches Professor Messer's videos on the bus.
"""),
    ("lily", "Lily", "f", """
food.diet | Lily eats gluten-free by choice, not for medical reasons.
food.likes | Lily loves dim sum and goes with her family every Sunday.
food.allergy | Lily has a severe sesame allergy.
food.restaurant | Lily prefers a patio or outdoor seating when the weather allows.
home.city | Lily rents a basement suite in East Vancouver.
home.flat | Lily's suite has low ceilings and not much light.
home.move | Lily is on the waiting list for a co-op apartment in Mount Pleasant.
work.role | Lily is a freelance graphic designer who does book covers.
work.project | Lily is designing the covers of a fantasy trilogy, due to the publisher on
    30 June.
work.employer | Lily's main client is Harbourlight Press.
hobbies.main | Lily does pottery at a community studio on Commercial Drive.
hobbies.other | Lily paddleboards on False Creek in summer.
hobbies.reading | Lily listens to fantasy audiobooks while she works.
pets.pet | Lily has a rabbit called Mochi.
pets.food | Mochi eats timothy hay, leafy greens and a few pellets.
pets.vet | Mochi's vet is an exotic-animal specialist in Burnaby.
pets.care | Lily's neighbour Priscilla looks after Mochi when Lily is away.
tech.laptop | Lily works on a 16-inch MacBook Pro with a Wacom tablet.
tech.software | Lily designs in Affinity Designer and has dropped Adobe.
tech.github | Lily's GitHub handle is lily-draws.
tech.prefs | Lily wants her screen colour-calibrated and Night Shift turned off.
travel.likes | Lily loves Japan and has been four times.
travel.style | Lily plans trips around food markets and stationery shops.
travel.trip | Lily is going to Osaka and Kyoto in October.
travel.seat | Lily always wants a window.
money.bills | Lily's quarterly tax instalment is due on 15 June.
money.savings | Lily tries to keep three months of expenses in savings.
money.payment | Lily's clients pay her by e-transfer.
"""),
    ("victor", "Victor", "m", """
food.diet,health.condition | Victor counts carbs because of his diabetes.
food.likes | Victor loves Texas brisket and Tex-Mex.
food.dislikes | Victor won't touch sushi.
food.drinks | Victor drinks unsweetened iced tea.
health.condition | Victor has type 2 diabetes.
health.meds | Victor takes metformin twice a day with meals.
health.doctor | Victor's endocrinologist is Dr Ramirez at St David's.
health.sport,schedule.morning | Victor walks the Lady Bird Lake trail every morning at six.
family.partner | Victor's wife, Linda, is a retired librarian.
family.kids | Victor has two grown daughters, Jess in Houston and Kate in Denver.
family.dates | Victor and Linda's 40th anniversary is on 17 October.
family.friends | Victor's fishing buddy Earl has a boat on Lake Travis.
family.kids | Victor has three grandchildren; the youngest was born in March.
hobbies.main | Victor goes fishing on Lake Travis most Saturdays.
hobbies.other | Victor smokes briskets for church fundraisers.
hobbies.reading | Victor reads Civil War history.
home.city | Victor lives in a ranch-style house in South Austin.
home.repair | Victor's AC unit is fifteen years old and struggles in August.
home.flat | Victor's house has a big backyard with a smoker and a vegetable patch.
money.savings | Victor's pension comes from the Teacher Retirement System of Texas.
money.bills | Victor pays property tax in January and the house insurance in May.
money.payment | Victor prefers paying by check and distrusts apps.
tech.phone | Victor has a large-screen iPhone with the text size turned up.
tech.laptop | Victor shares an iPad with Linda.
tech.github | Victor's GitHub handle is coach-vic.
tech.prefs | Victor wants big text and no more than five apps on the home screen.
work.role | Victor still coaches the offensive line part-time at a high school.
work.hours,schedule.workdays | Victor's practices are on weekday afternoons from August to
    November.
work.manager | Victor's head coach is Ray Delgado.
"""),
]
