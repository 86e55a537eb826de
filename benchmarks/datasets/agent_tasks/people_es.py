"""Spanish-speaking people of the agent-task set (format: see people_en.py)."""

DEV = [
    ("lucia", "Lucía", "f", """
food.diet | Lucía es vegetariana desde hace diez años.
food.allergy | Lucía tiene alergia a los frutos secos.
food.likes | A Lucía le encanta la cocina libanesa, sobre todo el hummus y el falafel.
food.restaurant | Lucía prefiere restaurantes con terraza, incluso en invierno.
food.drinks | Lucía no toma café; bebe rooibos.
work.role | Lucía es periodista de la sección de cultura.
work.employer | Lucía trabaja en un diario digital llamado La Crónica Abierta.
work.manager | La jefa de sección de Lucía es Pilar Montero.
work.project | Lucía prepara un reportaje largo sobre las librerías de barrio que cierran.
work.hours,schedule.workdays | Lucía entra a trabajar a las once y sale tarde, hacia las ocho.
home.city | Lucía vive en Lavapiés, en Madrid.
home.flat | Lucía vive en un cuarto sin ascensor.
home.repair | A Lucía le falla el calentador del agua; el casero se llama don Ramón.
tech.laptop | Lucía escribe en un portátil Lenovo con Windows.
tech.software | Lucía graba sus entrevistas con el móvil y las transcribe con Otter.
tech.github | El usuario de GitHub de Lucía es lucia-cronica.
tech.phone | Lucía tiene un iPhone 13.
family.partner | La pareja de Lucía, Álvaro, es profesor de instituto.
family.parents | Los padres de Lucía viven en Salamanca.
family.dates | Álvaro cumple años el 11 de junio.
family.friends | Nuria, la mejor amiga de Lucía, se casa en septiembre en Cádiz.
hobbies.main | Lucía hace cerámica los sábados por la mañana.
hobbies.reading | Lucía lee poesía contemporánea y va a recitales.
hobbies.music | Lucía canta en un coro de góspel.
health.sport | Lucía nada en la piscina municipal tres veces por semana.
health.condition | Lucía tiene anemia y toma hierro.
health.doctor | La médica de cabecera de Lucía es la doctora Ruiz.
"""),
    ("javier", "Javier", "m", """
food.diet,health.condition | Javier sigue una dieta baja en sal por la tensión.
food.likes | A Javier le chiflan las tortillitas de camarones y el salmorejo.
food.dislikes | Javier no soporta el cilantro.
food.cooking | Javier cocina un guiso grande los domingos para toda la semana.
work.role | Javier es enfermero en la UCI del hospital Virgen del Rocío.
work.hours,schedule.workdays | Javier trabaja a turnos: dos mañanas, dos tardes, dos noches y
    cuatro días libres.
work.manager | La supervisora de Javier se llama Mercedes Lara.
home.city | Javier vive en Triana, Sevilla.
home.flat | El piso de Javier es pequeño y el dormitorio no tiene aire acondicionado.
home.move | Javier busca piso en Nervión para estar más cerca del hospital.
pets.pet | Javier tiene un galgo adoptado que se llama Trueno.
pets.care | Cuando Javier hace noches, su vecina Amparo saca a Trueno.
pets.vet | Trueno va a la clínica veterinaria Triana Vet.
pets.food | Trueno come pienso para estómagos sensibles y nada de sobras.
money.bank | Javier tiene la cuenta en el BBVA.
money.savings | Javier ahorra para la entrada de un piso.
money.bills | El alquiler de Javier, 750 euros, se paga el día 1.
money.subs | Javier paga Spotify y un gimnasio al que casi no va.
health.sport | Javier corre por la orilla del Guadalquivir cuando sale del turno de noche.
health.condition | Javier tiene la tensión alta desde los treinta.
health.meds | Javier toma enalapril todas las mañanas.
tech.phone | Javier tiene un Xiaomi al que ya le dura poco la batería.
tech.laptop | Javier tiene un portátil viejo que apenas usa.
tech.github | El usuario de GitHub de Javier es javi-triana.
family.parents | La madre de Javier vive sola en Écija y él la visita los domingos que libra.
family.siblings | Manuel, el hermano de Javier, vive en Londres.
family.dates | La madre de Javier cumple años el 25 de junio.
learning.language | Javier estudia inglés para poder trabajar en Londres algún día.
learning.course | Javier va a una academia de inglés los martes y los jueves.
learning.goal | Javier quiere aprobar el First (B2) en diciembre.
"""),
    ("carmen", "Carmen", "f", """
food.diet | Carmen no come carne roja.
food.allergy | Carmen es celíaca.
food.likes | A Carmen le encantan el arroz a banda y la paella de verduras.
food.restaurant | Carmen prefiere los restaurantes cerca de la playa de la Malvarrosa.
work.role | Carmen es arquitecta y tiene su propio estudio.
work.project | Carmen está rehabilitando una alquería en la huerta de Alboraya.
work.team | Carmen trabaja con su socio, Pau Ferrer, y con una aparejadora, Elena.
travel.likes | A Carmen le encantan los viajes de arquitectura: Oporto, Copenhague, Tokio.
travel.seat | Carmen pide siempre ventanilla.
travel.airline | Carmen vuela con Iberia y tiene la tarjeta Iberia Plus Oro.
travel.trip | Carmen va a la Bienal de Venecia a finales de junio.
travel.style | Carmen prefiere hoteles pequeños y con diseño.
home.city | Carmen vive en el barrio de Ruzafa, en Valencia.
home.flat | El ático de Carmen tiene una terraza grande llena de plantas.
home.repair | La persiana del salón de Carmen está rota.
tech.laptop | Carmen trabaja con un iMac y un MacBook Pro.
tech.software | Carmen diseña en Revit y hace los renders con Twinmotion.
tech.github | El usuario de GitHub de Carmen es carmen-alqueria.
tech.prefs | Carmen quiere el sistema en valenciano siempre que exista la opción.
family.partner | Carmen está casada con Vicent, que es músico.
family.kids | Carmen tiene dos hijos adolescentes, Marc y Júlia.
family.dates | Marc cumple dieciséis el 4 de julio.
family.parents,schedule.weekly | Josep, el padre de Carmen, tiene alzhéimer y vive en una
    residencia; ella lo visita los miércoles por la tarde.
schedule.morning | Carmen va al estudio en bici a las ocho.
schedule.quiet | Carmen no acepta reuniones los viernes por la tarde.
schedule.evening | Carmen no contesta mensajes de trabajo después de las nueve.
money.bills | Carmen paga la cuota de autónomos el último día de cada mes.
money.payment | Carmen cobra a sus clientes por transferencia, en tres plazos.
money.bank | Carmen tiene la cuenta del estudio en CaixaBank.
"""),
    ("diego", "Diego", "m", """
food.diet | Diego come de todo, pero intenta no cenar tarde.
food.allergy | Diego es alérgico al melocotón.
food.likes | A Diego le encantan los pintxos del Casco Viejo y el bacalao al pil-pil.
food.drinks | Diego bebe txakoli en verano y cerveza sin alcohol entre semana.
work.role | Diego es programador de videojuegos.
work.employer | Diego trabaja en un estudio pequeño llamado Txori Games.
work.project | Diego está terminando un juego de plataformas que sale en otoño.
work.manager | La jefa de Diego es Ane Etxeberria, la directora creativa del estudio.
tech.laptop | Diego trabaja con un PC de sobremesa con una RTX 4080.
tech.software | Diego programa en C++ con Unreal Engine y usa Rider.
tech.github | El usuario de GitHub de Diego es diego-txori.
tech.prefs | Diego quiere el teclado con distribución española y el tema oscuro.
tech.accounts | Diego guarda las contraseñas en Bitwarden.
health.sport,schedule.weekly | Diego juega a fútbol sala los jueves por la noche.
health.condition | Diego tiene el tobillo derecho débil desde un esguince.
health.sleep | Diego duerme mal en épocas de entrega.
learning.language | Diego está aprendiendo euskera.
learning.course | Diego va a un euskaltegi tres tardes por semana.
learning.goal | Diego quiere sacarse el B2 de euskera el año que viene.
family.partner | La novia de Diego, Irati, es médica residente.
family.parents | Los padres de Diego viven en Burgos.
family.dates | Diego e Irati celebran su aniversario el 20 de julio.
home.city | Diego vive en Deusto, Bilbao.
home.flat | El piso de Diego es muy luminoso pero tiene humedades.
home.area | Diego va andando al trabajo por la ría.
hobbies.main | Diego escala en el rocódromo y, cuando puede, en Atxarte.
hobbies.reading | Diego lee cómics, sobre todo manga.
hobbies.music | Diego toca la batería en un grupo de versiones.
"""),
]

TEST = [
    ("marta", "Marta", "f", """
food.diet | Marta es vegana.
food.dislikes | Marta odia la berenjena.
food.likes | A Marta le encantan los curris tailandeses.
food.cooking | Marta cocina legumbres casi todos los días.
work.role | Marta es ingeniera agrónoma.
work.employer | Marta trabaja en una cooperativa de fruta de Caspe.
work.hours,schedule.workdays | Marta va a la oficina de Caspe lunes y martes y teletrabaja el
    resto de la semana.
work.project | Marta está probando un riego por goteo nuevo en los melocotoneros.
pets.pet | Marta tiene dos gatas, Nube y Canela.
pets.vet | Las gatas de Marta van a la clínica Vetersalud del barrio.
pets.food | Canela es diabética y necesita un pienso especial.
pets.care | Canela necesita insulina dos veces al día; Clara, la hermana de Marta, sabe
    ponérsela.
home.city | Marta vive en el barrio de Delicias, en Zaragoza.
home.flat | El piso de Marta es interior y muy silencioso.
home.move | Marta está pensando en mudarse a un pueblo cerca de Caspe.
health.sport | Marta sale en bici de carretera los domingos.
health.condition | Marta tiene asma por el polen del olivo.
health.meds | Marta lleva siempre un inhalador de Ventolin cuando sale a entrenar.
family.siblings | Marta tiene una hermana, Clara, que vive en Huesca.
family.parents | Los padres de Marta tienen una finca de almendros en Calatayud.
family.dates | Clara cumple años el 2 de agosto.
tech.phone | Marta tiene un Motorola.
tech.laptop | Marta usa un portátil de la cooperativa con Windows.
tech.github | El usuario de GitHub de Marta es marta-riego.
tech.software | Marta analiza los datos de los sensores con R.
learning.course | Marta hace un máster online de agricultura de precisión.
learning.goal | Marta entrega el trabajo de fin de máster en septiembre.
learning.language | Marta repasa el francés para unas jornadas en Montpellier.
"""),
    ("andres", "Andrés", "m", """
food.diet,health.condition | Andrés cuida el azúcar porque es prediabético.
food.likes | A Andrés le encantan los chilaquiles verdes y la comida oaxaqueña.
food.restaurant | Andrés prefiere las fondas sencillas a los restaurantes elegantes.
food.drinks | Andrés toma mezcal, pero solo los fines de semana.
work.role | Andrés es abogado mercantil.
work.employer | Andrés es socio de Ibarra y Solís, un despacho de Polanco.
work.project | Andrés lleva la fusión de dos cadenas de farmacias, que se firma en julio.
work.team | La asistente de Andrés es Lupita Herrera.
travel.airline | Andrés vuela con Aeroméxico y es Platino en Club Premier.
travel.seat | Andrés quiere pasillo y en las primeras filas.
travel.docs | Andrés tiene visa de Estados Unidos vigente hasta 2029.
travel.trip | Andrés viaja a Monterrey cada quince días por trabajo.
family.partner | Gabriela, la esposa de Andrés, es pediatra.
family.kids | Andrés tiene dos hijos, Santiago y Regina, de ocho y cinco años.
family.dates | Regina cumple seis el 16 de junio.
family.parents,schedule.weekly | Andrés come con su mamá en Puebla un sábado al mes.
health.condition | Andrés tiene que revisarse la glucosa cada tres meses.
health.sport,schedule.weekly | Andrés juega pádel los martes y viernes a las siete de la tarde.
health.doctor | El endocrinólogo de Andrés es el doctor Treviño.
schedule.morning | Andrés lleva a los niños al colegio a las 7:30.
schedule.quiet | Andrés no contesta llamadas de trabajo los domingos.
schedule.workdays | Andrés suele estar en el despacho de nueve a siete.
tech.phone | Andrés tiene un iPhone 15 Pro y otro teléfono del despacho.
tech.laptop | Andrés usa una Surface que le dio el despacho.
tech.github | El usuario de GitHub de Andrés es andres-ibarra.
money.bank | Andrés tiene sus cuentas en Banorte.
money.savings | Andrés ahorra para la universidad de sus hijos.
money.bills | La colegiatura de los niños se paga el día 10 de cada mes.
"""),
    ("isabel", "Isabel", "f", """
food.diet | Isabel no toma lactosa.
food.likes | A Isabel le encantan las habas con jamón y el remojón granadino.
food.cooking | Isabel hace mermeladas con la fruta del huerto.
food.restaurant | Isabel prefiere comer temprano, a la una, y en sitios tranquilos.
home.city | Isabel vive en el Albaicín, en Granada.
home.flat | La casa de Isabel es un carmen con huerto y muchas escaleras.
home.repair | A Isabel se le ha roto la caldera y está esperando al técnico.
hobbies.main | Isabel cultiva tomates y habas en su huerto.
hobbies.club | Isabel va a un club de lectura en la biblioteca los jueves.
hobbies.other | Isabel pinta acuarelas de paisajes.
family.kids | Isabel tiene una hija, Elena, que vive en Málaga.
family.kids | Isabel tiene tres nietos: Hugo, Vera y Nico.
family.dates | Vera cumple diez años el 9 de julio.
family.partner | Isabel es viuda desde hace cuatro años.
health.condition | Isabel tiene artrosis en la rodilla izquierda.
health.meds | Isabel toma omeprazol, y un antiinflamatorio cuando le duele la rodilla.
health.doctor | El traumatólogo de Isabel es el doctor Castillo, del Clínico.
health.sport | Isabel hace aquagym los lunes y los miércoles.
travel.likes | A Isabel le gustan los viajes culturales en grupo.
travel.style | Isabel viaja con el Imserso y prefiere el autobús al avión.
travel.trip | Isabel va a Santiago de Compostela en octubre con unas amigas.
tech.phone | Isabel tiene un Samsung con la letra muy grande.
tech.laptop | Isabel tiene una tableta que le regaló su hija.
tech.github | Su nieto Hugo le abrió a Isabel una cuenta de GitHub: isabel-albaicin.
tech.prefs | Isabel quiere hacer las videollamadas con un solo botón.
money.bills | A Isabel le cargan la luz y el agua a primeros de mes.
money.bank | Isabel cobra la pensión en Caja Rural de Granada.
money.payment | Isabel paga casi todo en efectivo.
"""),
]
