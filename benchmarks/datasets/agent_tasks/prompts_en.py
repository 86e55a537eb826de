"""English task prompts of the agent-task set, hand-written; the dev and test lists share no
phrasing (the test list was written separately, for other tasks or other wordings).

Templates: `topic | form | needs | text` (an indented line continues the one above). `needs`
names the aspects whose memories the task needs (`topic.*` = the whole topic); the first one,
and any marked `!`, must be stored for the template to be used for a person. In the text,
{name} is the person's first name and ((a|b)) picks a (m) or b (f).
Nothing-stored prompts: `kind | text`, kind one of general, arithmetic, writing (no person
involved) or unstored (about the person, but nothing of the kind is stored for anyone).
"""

DEV_TEMPLATES = """
food | request | food.diet food.allergy food.likes food.restaurant |
    Book {name} a table for dinner on Saturday.
food | request | food.diet food.allergy food.likes food.restaurant |
    Table for two, Saturday night, somewhere {name} will actually enjoy. Go.
food | planning | food.diet food.allergy food.likes food.dislikes food.cooking food.drinks |
    Put together next week's shopping list for me.
food | recommending | food.diet food.allergy food.likes food.dislikes |
    Suggest three quick weeknight recipes I could make tonight after work.
food | question | food.diet food.allergy food.dislikes food.drinks |
    We're having {name} over on Friday. What should we serve, and is there anything to keep
    off the menu?
food | request | food.diet food.allergy food.dislikes |
    Order lunch for Thursday's offsite and make sure there's something {name} can eat.
food | request | food.diet food.allergy food.likes food.dislikes food.drinks !pets.food
    pets.food | Do the weekly online grocery order for {name}, including whatever the
    animals need.
home | request | home.repair home.city home.area |
    Find a tradesperson who can come round to {name}'s place this week.
home | drafting | home.city home.area home.flat |
    Write a short blurb for a house-swap site describing {name}'s home and what's nearby.
home | planning | home.move home.flat |
    Draw up a house-hunting checklist for {name}: what should the next place have?
home | request | home.flat home.city |
    Order a new sofa for {name} and arrange the delivery.
home | briefing | home.* pets.* |
    I'm house-sitting for {name} next week. Tell me what I need to know.
work | drafting | work.role work.employer work.project |
    Write a short bio of {name} for the conference website.
work | drafting | work.role work.employer work.project |
    I'm introducing {name} at the all-hands on Friday. Could you give me three or four
    sentences on what {name} does, who for, and what's keeping {name} busy right now?
work | drafting | work.manager work.team |
    Draft an out-of-office reply for me: I'm away all of next week.
work | briefing | work.* |
    Our new hire meets {name} tomorrow. Give them a quick briefing on {name}'s job.
work | planning | work.manager work.project |
    Help {name} prepare talking points for Monday's one-to-one.
work | drafting | work.role work.employer |
    Rewrite the headline on my LinkedIn profile so it's up to date.
health | planning | health.sport health.condition health.goal |
    Make a four-week training plan for {name}.
health | request | health.doctor |
    Book me in with my usual practitioner some time next week.
health | question | health.condition health.meds health.sleep |
    What should {name} bring up at the annual check-up?
health | recommending | health.condition health.sport |
    Recommend a fitness class {name} could safely take up.
health | drafting | health.condition health.meds |
    Fill in the medical questions on {name}'s sign-up form for the charity bike ride.
travel | planning | travel.likes travel.style travel.transport |
    Plan a weekend away for {name}.
travel | planning | travel.likes travel.style travel.transport |
    My partner and I have a free weekend in three weeks. Could you put together a couple of
    options for getting away? Nothing too far, please.
travel | request | travel.seat travel.airline travel.docs travel.transport |
    Book {name}'s flights for the sales kickoff in Berlin.
travel | planning | travel.trip travel.packing health.meds |
    Make a packing list for my next trip.
travel | question | travel.docs travel.trip |
    Is there any paperwork {name} should sort out before travelling this year?
travel | planning | travel.style travel.likes !pets.pet pets.pet |
    Find a place to stay for {name}'s weekend away that will take the animals too.
tech | setup | tech.laptop tech.software tech.prefs tech.accounts |
    Set up a new laptop for {name}.
tech | request | tech.github |
    Give {name} access to our code repository.
tech | request | tech.github |
    Add me as a reviewer on that pull request. You'll need my username.
tech | question | tech.phone |
    {name}'s mobile keeps freezing. What model is it, so I can look up a fix?
tech | setup | tech.software tech.prefs |
    Configure a fresh install of my tools the way I like them.
tech | request | tech.accounts |
    I've been locked out of something again. Where would my credentials be kept?
family | planning | family.dates |
    Which presents does {name} need to buy over the next couple of months?
family | drafting | family.parents |
    Draft a message from {name} inviting the folks round for Sunday lunch.
family | question | family.partner family.parents family.siblings |
    Who should go down as {name}'s emergency contacts?
family | planning | family.kids |
    Plan a rainy-day outing for {name} and the kids.
family | briefing | family.* |
    I'm meeting {name}'s people at the party on Saturday. Who's who?
schedule | request | schedule.* |
    Find a one-hour slot next week for a call with {name}.
schedule | request | schedule.* |
    Call with {name} next week. When?
schedule | question | schedule.morning schedule.workdays schedule.quiet schedule.evening |
    When's the best time to ring {name} tomorrow?
schedule | planning | schedule.quiet schedule.weekly schedule.workdays |
    Protect two hours a week in my diary for uninterrupted thinking.
hobbies | recommending | hobbies.* |
    Recommend a birthday present for {name}, nothing too expensive.
hobbies | planning | hobbies.* |
    Plan a free Saturday for {name}.
hobbies | question | hobbies.* |
    Is there anything on in town this month that {name} would enjoy?
money | request | money.bills money.payment money.bank |
    Make sure everything {name} owes this month goes out on time.
money | planning | money.budget money.savings money.bills money.subs |
    Set up a monthly budget for me.
money | request | money.subs |
    Cancel whatever I'm paying for every month but not really using.
money | question | money.savings money.budget |
    How much should {name} put away each month to hit the goal?
pets | drafting | pets.* |
    Write instructions for whoever looks after {name}'s animals next week.
pets | request | pets.food pets.pet |
    We're nearly out. Restock whatever {name}'s pets eat.
pets | request | pets.vet pets.pet |
    Book the yearly check-up and jabs for {name}'s animal.
learning | planning | learning.* |
    Suggest a weekly study routine for {name}.
learning | recommending | learning.* |
    Find {name} a podcast or an app that would help with the studying.
learning | question | learning.goal learning.course |
    Remind me what I'm preparing for, and by when.
"""

TEST_TEMPLATES = """
food | planning | food.diet food.allergy food.likes food.dislikes food.drinks |
    {name} is coming to our barbecue. Work out a menu that will suit.
food | recommending | food.diet food.allergy food.likes food.restaurant |
    Pick a spot for a work lunch with {name} on Thursday.
food | request | food.diet food.allergy food.likes food.restaurant |
    Dinner for {name}, Friday. Somewhere safe. Reserve it.
food | request | food.diet food.allergy food.likes food.dislikes food.cooking |
    Sign me up for a meal-kit box and choose the first week's dishes.
food | question | food.diet food.allergy food.dislikes |
    The caterers for the retreat need to know what {name} can and can't have. What do I
    tell them?
home | request | home.repair home.city |
    Line up a handyman for {name}, for whatever's outstanding around the house.
home | drafting | home.flat home.city home.area |
    Describe {name}'s property for the contents-insurance renewal.
home | planning | home.move home.flat |
    {name} is looking for somewhere new to live. Draw up the must-haves.
home | briefing | home.* pets.* |
    A friend is staying at {name}'s while {name} is away. What should they know?
work | drafting | work.role work.employer work.project |
    Write a two-line speaker introduction for {name} at Thursday's panel.
work | drafting | work.role work.employer work.project |
    Could you write up a paragraph about {name} for the partner organisation's newsletter?
    Just what {name} does professionally, where, and what's on the go at the moment.
work | briefing | work.* |
    I'm meeting {name} for the first time about a possible collaboration. What should I
    know about their working life?
work | drafting | work.manager work.team |
    I'm off sick tomorrow. Draft a message saying who's covering for me.
work | question | work.project work.hours |
    Is this a sensible moment to ask {name} to take on something extra?
health | planning | health.condition health.sport health.goal |
    Suggest a gentle exercise routine for {name} over the summer.
health | request | health.doctor |
    Set up an appointment with the specialist {name} normally sees.
health | question | health.meds health.condition |
    What should go in {name}'s first-aid kit for the trip next month?
health | briefing | health.* |
    Give the new personal trainer a rundown on {name}'s health before the first session.
travel | planning | travel.likes travel.style travel.transport |
    {name} has a free week in the autumn. Sketch out a getaway.
travel | request | travel.seat travel.airline travel.docs travel.transport |
    Sort out {name}'s tickets to the Lisbon workshop.
travel | question | travel.trip travel.docs |
    Anything I should take care of before my next journey abroad?
travel | planning | travel.likes travel.style !pets.pet pets.pet pets.care |
    Arrange a week off for {name}, including what happens to the pet.
tech | setup | tech.laptop tech.software tech.prefs tech.accounts |
    {name} just got a replacement computer. Get it ready for day one.
tech | request | tech.github |
    Invite {name} to our organisation on the source-hosting site.
tech | question | tech.phone tech.laptop |
    Which gadgets do I use? I want to buy chargers that fit all of them.
tech | setup | tech.prefs tech.phone |
    Configure the new tablet for {name} so it feels familiar.
family | planning | family.dates |
    Put the big days in my family's calendar for the next three months.
family | drafting | family.partner family.kids family.siblings |
    Write a short family paragraph for {name}'s holiday newsletter.
family | briefing | family.* |
    Before I go to {name}'s get-together, who am I likely to meet?
schedule | request | schedule.* |
    Put a 30-minute catch-up with {name} in the calendar sometime next week.
schedule | question | schedule.evening schedule.quiet schedule.morning |
    Is it all right to message {name} at nine tonight?
hobbies | recommending | hobbies.* |
    Pick a thank-you present for {name}.
hobbies | planning | hobbies.* |
    Fill {name}'s free Sunday with something fun.
hobbies | recommending | hobbies.* |
    Find a weekend workshop I'd love.
money | request | money.bills money.payment money.bank |
    Go through {name}'s outgoings for June and flag anything coming up.
money | planning | money.budget money.savings |
    Help me work out how much I can spend on holidays this year.
money | question | money.payment money.bank |
    What's the easiest way to send {name} the money I owe?
pets | drafting | pets.* |
    Leave a note for the house-sitter about {name}'s animal.
pets | request | pets.vet pets.pet |
    Get {name}'s pet booked in for its shots.
pets | request | pets.food pets.pet |
    Stock up on supplies for {name}'s pet for the month ahead.
learning | planning | learning.* |
    Lay out a revision timetable for {name}.
learning | recommending | learning.* |
    What should I read or watch next to get ahead?
"""

DEV_NOTHING = """
general | What is the capital of Australia?
general | How many bones are there in an adult human body?
general | Who wrote Pride and Prejudice?
general | Why is the sky blue? Two sentences, please.
general | What's the difference between a virus and a bacterium?
general | In what year did the Berlin Wall fall?
general | What does HTTP stand for?
general | How does a fridge keep things cold?
general | How do you lay a table for a formal dinner?
arithmetic | What is 17 times 23?
arithmetic | Convert 72 degrees Fahrenheit to Celsius.
arithmetic | A train leaves at 14:40 and the journey takes 2 hours 35 minutes. When does it arrive?
arithmetic | What's 15% of 240?
arithmetic | Split a bill of 186 between four people.
arithmetic | How many seconds are there in a week?
writing | Write a haiku about autumn.
writing | Write a limerick about a cat who hates Mondays.
writing | Draft a polite email turning down a sales call.
writing | Summarise the plot of Hamlet in three sentences.
writing | Give me five names for a board-game café.
writing | Translate "Where is the train station?" into French.
writing | Write a tongue twister about a lighthouse keeper.
writing | Explain recursion to a ten-year-old.
unstored | What is {name}'s blood type?
unstored | What size shoes does {name} wear?
unstored | Which primary school did {name} go to?
unstored | What was {name}'s first car?
unstored | What's {name}'s favourite colour?
unstored | What's {name}'s middle name?
unstored | Which hospital was {name} born in?
unstored | Who is {name}'s dentist?
"""

TEST_NOTHING = """
general | What's the tallest mountain in Africa?
general | Who painted the Mona Lisa?
general | How long does sunlight take to reach the Earth?
general | What language do people speak in Brazil?
general | What causes the seasons?
general | Roughly what temperature does water boil at on top of Everest?
arithmetic | What's 3/8 as a percentage?
arithmetic | If I save 125 a week, how much is that after a year?
arithmetic | How many minutes are there between 9:15 and 13:50?
arithmetic | What is the square root of 1,764?
arithmetic | Convert 10 miles to kilometres.
writing | Write a four-line poem about the sea.
writing | Draft a two-sentence apology for a late reply.
writing | Give me three ideas for a science-fair project for a twelve-year-old.
writing | Rewrite "the meeting has been moved to Thursday" in a formal tone.
writing | Write a riddle whose answer is "a shadow".
unstored | What is {name}'s passport number?
unstored | What's {name}'s favourite film?
unstored | Which university did {name} go to?
unstored | What's {name}'s shirt size?
unstored | What was the name of {name}'s very first pet?
"""
