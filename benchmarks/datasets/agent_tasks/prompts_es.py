"""Spanish task prompts of the agent-task set (format: see prompts_en.py)."""

DEV_TEMPLATES = """
food | request | food.diet food.allergy food.likes food.restaurant |
    Resérvale a {name} una mesa para cenar el sábado.
food | planning | food.diet food.allergy food.likes food.dislikes food.cooking food.drinks |
    Hazme la lista de la compra para la semana que viene.
food | question | food.diet food.allergy food.dislikes food.drinks |
    {name} viene a cenar el viernes. ¿Qué preparo y qué debería evitar?
food | request | food.diet food.allergy food.dislikes |
    Encarga la comida del taller del jueves y asegúrate de que haya algo que {name} pueda
    tomar.
home | request | home.repair home.city |
    Busca a alguien que pueda pasarse esta semana por casa de {name}.
home | drafting | home.city home.area home.flat |
    Escribe un anuncio breve para intercambiar la casa de {name} en vacaciones: cómo es y
    qué hay cerca.
home | planning | home.move home.flat home.city |
    Ayuda a {name} a buscar casa nueva: ¿qué debería tener?
work | drafting | work.role work.employer work.project |
    Escribe una biografía breve de {name} para la web del congreso.
work | drafting | work.manager work.team |
    Redacta mi respuesta automática de fuera de la oficina: estoy fuera toda la semana que
    viene.
work | briefing | work.* |
    Pon al día al compañero nuevo: quién es {name} y a qué se dedica.
tech | setup | tech.laptop tech.software tech.prefs tech.accounts |
    Configura un ordenador nuevo para {name}.
tech | request | tech.github |
    Dale acceso a {name} a nuestro repositorio de código.
tech | question | tech.phone |
    A {name} se le cuelga el móvil cada dos por tres. ¿Qué modelo tiene?
family | planning | family.dates |
    ¿Qué regalos tiene que comprar {name} en los próximos dos meses?
family | question | family.partner family.parents family.siblings |
    ¿A quién debería poner como contacto de emergencia?
family | briefing | family.* |
    Este finde conozco a la gente de {name}. ¿Quién es quién?
health | planning | health.sport health.condition health.goal |
    Prepara un plan de entrenamiento de cuatro semanas para {name}.
health | question | health.condition health.meds health.sleep |
    ¿Qué debería comentar {name} en la próxima revisión?
health | request | health.doctor |
    Pide cita para {name} con su especialista de siempre.
hobbies | recommending | hobbies.* |
    Recomiéndame un regalo de cumpleaños para {name}.
hobbies | planning | hobbies.* |
    Planea un sábado libre para {name}.
pets | drafting | pets.* |
    Escribe instrucciones para quien cuide al animal de {name} la semana que viene.
pets | request | pets.vet pets.pet |
    Pide la cita anual de vacunas para la mascota de {name}.
money | request | money.bills money.payment money.bank |
    Asegúrate de que todos los pagos de {name} de este mes salgan a tiempo.
money | planning | money.* |
    Hazme un presupuesto mensual.
learning | planning | learning.* |
    Propón una rutina semanal de estudio para {name}.
learning | recommending | learning.* |
    Busca un pódcast o una app que le ayude a {name} con lo que está estudiando.
travel | planning | travel.likes travel.style |
    Organiza una escapada de fin de semana para {name}.
travel | request | travel.seat travel.airline travel.docs |
    Compra los billetes de avión de {name} para la reunión de Berlín.
schedule | request | schedule.* |
    Busca un hueco de una hora para una llamada con {name} la semana que viene.
schedule | question | schedule.morning schedule.quiet schedule.weekly schedule.evening |
    ¿Cuándo es mejor llamar a {name} mañana?
"""

TEST_TEMPLATES = """
food | recommending | food.diet food.allergy food.likes food.restaurant |
    Elige un sitio para comer con {name} el jueves.
food | question | food.diet food.allergy food.dislikes |
    El catering de la jornada pregunta qué no puede tomar {name}. ¿Qué les digo?
food | planning | food.diet food.likes food.dislikes food.cooking |
    Piensa tres platos para una comida en casa con {name}.
work | drafting | work.role work.employer work.project |
    Escribe dos líneas de presentación de {name} para la mesa redonda del jueves.
work | briefing | work.* |
    Mañana me reúno con {name} por primera vez por trabajo. ¿Qué debería saber?
pets | drafting | pets.* |
    Déjale una nota a la cuidadora sobre los animales de {name}.
pets | request | pets.vet pets.pet |
    Pide hora en el veterinario para los animales de {name}.
home | request | home.repair home.city |
    Llama a alguien que arregle lo que está pendiente en casa de {name}.
home | drafting | home.flat home.city |
    Describe la vivienda de {name} para el seguro del hogar.
home | planning | home.move home.flat |
    {name} quiere cambiar de casa. Haz una lista de requisitos.
health | planning | health.condition health.sport |
    Propón una rutina de ejercicio suave para {name} este verano.
health | question | health.meds health.condition |
    ¿Qué debería llevar {name} en el botiquín de viaje?
health | request | health.doctor |
    Consíguele a {name} la próxima cita con su especialista.
family | planning | family.dates |
    Apunta en el calendario las fechas familiares importantes de {name} para este verano.
family | question | family.* |
    ¿Quiénes forman el círculo más cercano de {name}?
family | drafting | family.partner family.kids |
    Escribe unas líneas sobre la familia de {name} para la felicitación de Navidad.
tech | setup | tech.laptop tech.software tech.prefs tech.accounts |
    {name} estrena equipo. Déjalo listo para el primer día.
tech | request | tech.github |
    Invita a {name} a nuestra organización en la plataforma de código.
tech | question | tech.phone tech.laptop |
    ¿Qué aparatos uso? Quiero comprarme cargadores que sirvan para todos.
learning | planning | learning.* |
    Hazle a {name} un calendario de estudio semanal.
learning | recommending | learning.* |
    ¿Qué podría leer o escuchar para avanzar más rápido?
travel | request | travel.seat travel.airline travel.docs |
    Sácale a {name} los vuelos para el congreso de Lisboa.
travel | planning | travel.likes travel.style |
    {name} tiene una semana libre en otoño. Propón un viaje.
travel | question | travel.trip travel.docs |
    ¿Qué tiene que dejar resuelto {name} antes del próximo viaje?
schedule | request | schedule.* |
    Mete en la agenda una llamada de media hora con {name} la semana que viene.
schedule | question | schedule.quiet |
    ¿Puedo llamar a {name} el domingo por la mañana?
money | request | money.bills money.bank money.payment |
    Repasa los gastos fijos de {name} de junio y avísame de lo que viene.
money | question | money.payment money.bank |
    ¿Cuál es la forma más fácil de pagarle a {name} lo que le debo?
hobbies | recommending | hobbies.* |
    Elige un regalo de agradecimiento para {name}.
hobbies | planning | hobbies.* |
    ¿Qué podría hacer {name} un domingo libre?
"""

DEV_NOTHING = """
general | ¿Cuál es la capital de Noruega?
general | ¿Cuántos huesos tiene el cuerpo humano adulto?
general | ¿Quién escribió Cien años de soledad?
general | ¿Por qué el cielo es azul? En dos frases.
arithmetic | ¿Cuánto es 23 por 17?
arithmetic | ¿Cuánto es el 15 % de 360?
arithmetic | Pasa 80 grados Fahrenheit a Celsius.
writing | Escribe un haiku sobre el otoño.
writing | Redacta un correo educado para rechazar una llamada comercial.
writing | Resume el argumento del Quijote en tres frases.
writing | Traduce «¿Dónde está la estación de tren?» al inglés.
unstored | ¿Qué grupo sanguíneo tiene {name}?
unstored | ¿Qué número de pie usa {name}?
unstored | ¿Cuál fue el primer coche de {name}?
unstored | ¿Cuál es el color favorito de {name}?
unstored | ¿Cuál es el segundo apellido de {name}?
"""

TEST_NOTHING = """
general | ¿Cuál es el río más largo del mundo?
general | ¿Quién pintó Las Meninas?
general | ¿Qué es la fotosíntesis? Explícalo en dos frases.
arithmetic | ¿Cuántos minutos hay entre las 9:20 y las 12:05?
arithmetic | ¿Cuál es la raíz cuadrada de 1296?
arithmetic | Si ahorro 50 euros a la semana, ¿cuánto tendré en un año?
writing | Escribe un poema corto sobre la lluvia.
writing | Reescribe «la reunión se ha movido al jueves» en tono formal.
writing | Inventa una adivinanza cuya respuesta sea «la sombra».
unstored | ¿Cuál es el número de pasaporte de {name}?
unstored | ¿Cuál es la película favorita de {name}?
unstored | ¿En qué universidad estudió {name}?
unstored | ¿Cuánto mide {name}?
"""
