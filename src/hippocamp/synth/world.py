"""The world a synthetic profile is rendered from: one fictional person, the people and places
around them, and a timeline. Every file is drawn from this one world, so facts agree across files.

``build_world(seed, persona, months)`` is deterministic: the same arguments give the same world.
Names, places and shops come from small embedded pools (fictional businesses, real cities).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

__all__ = [
    "PERSONAS",
    "City",
    "Person",
    "Pet",
    "Place",
    "World",
    "build_world",
    "rng_for",
]

FIRST = (
    "Mira Jonas Aylin Tomas Leila Kenji Sofia Mateo Amara Noah Ingrid Ravi Chloe Felix Yara Omar Hanna Luca Priya "
    "Elias Nadia Victor Zoe Samir Freya Daniel Ines Malik Clara Hugo Naomi Arjun Esme Tobias Lena Kofi Maya Pavel"
).split()
LAST = (
    "Okafor Lindqvist Moreau Tanaka Novak Haddad Ferreira Kowalski Brennan Duarte Nakamura Varga Osei Jansen "
    "Castillo Petrov Holm Mensah Ricci Kaur Dubois Sato Weber Nilsen Abara Costa Fischer Morgan Aziz Laine"
).split()


@dataclass(frozen=True)
class City:
    name: str
    country: str
    currency: str  # ISO code used on receipts and statements
    lat: float
    lon: float
    streets: tuple[str, ...]


CITIES = (
    City("Rotterdam", "Netherlands", "EUR", 51.9225, 4.4792, ("Nieuwe Binnenweg", "Witte de Withstraat", "Meent")),
    City("Lyon", "France", "EUR", 45.7640, 4.8357, ("Rue Mercière", "Quai Saint-Antoine", "Rue de la République")),
    City("Leeds", "United Kingdom", "GBP", 53.8008, -1.5491, ("Briggate", "Kirkgate", "Call Lane")),
    City("Porto", "Portugal", "EUR", 41.1579, -8.6291, ("Rua das Flores", "Rua de Santa Catarina", "Rua do Almada")),
    City("Austin", "United States", "USD", 30.2672, -97.7431, ("South Congress Ave", "East 6th St", "Guadalupe St")),
    City("Melbourne", "Australia", "AUD", -37.8136, 144.9631, ("Flinders Lane", "Smith St", "Lygon St")),
    City("Gothenburg", "Sweden", "SEK", 57.7089, 11.9746, ("Kungsportsavenyn", "Haga Nygata", "Linnégatan")),
)
TRIP_CITIES = (
    City("Lisbon", "Portugal", "EUR", 38.7223, -9.1393, ("Rua Augusta", "Rua do Carmo")),
    City("Edinburgh", "United Kingdom", "GBP", 55.9533, -3.1883, ("Royal Mile", "Rose Street")),
    City("Vienna", "Austria", "EUR", 48.2082, 16.3738, ("Kärntner Straße", "Mariahilfer Straße")),
    City("Copenhagen", "Denmark", "DKK", 55.6761, 12.5683, ("Strøget", "Nyhavn")),
    City("Barcelona", "Spain", "EUR", 41.3874, 2.1686, ("La Rambla", "Carrer de Verdi")),
)
CURRENCY_SIGN = {"EUR": "EUR", "GBP": "GBP", "USD": "USD", "AUD": "AUD", "SEK": "SEK", "DKK": "DKK"}

GYMS = ("FitHub", "Pulse Gym", "IronWorks", "Motion Club", "Northside Fitness")
SUPERMARKETS = ("FreshFields Market", "Green Basket", "DailyFare", "Corner Grocer")
CAFES = ("Bean There", "The Daily Grind", "Kettle & Crumb", "Morning Ritual", "Little Fox Coffee")
RESTAURANTS = ("Trattoria Lupo", "Saffron House", "Blue Lantern", "Casa Verde", "Harbour Kitchen", "Pho Minh")
VETS = ("Paws & Claws Veterinary", "Happy Tails Clinic", "Greenway Vets")
DENTISTS = ("Bright Smile Dental", "Riverside Dental Care", "City Dental Studio")
HOTELS = ("Hotel Alcova", "The Lantern Inn", "Parkside Suites", "Hotel Meridia")
AIRLINES = (("Skylark Air", "SK"), ("Aurora Airways", "AU"), ("Northwind", "NW"))
PET_NAMES = ("Biscuit", "Pepper", "Miso", "Juniper", "Waffles", "Luna", "Olive")


@dataclass(frozen=True)
class Persona:
    kind: str
    job: str
    org_kind: str  # employer or school
    orgs: tuple[str, ...]
    work_place: str  # what the calendar calls the place of work or study
    project_kind: str
    projects: tuple[str, ...]
    course: str  # the weekly evening course considered in the scheduling story


PERSONAS: dict[str, Persona] = {
    "student": Persona(
        "student",
        "master's student in environmental science",
        "university",
        ("Erasmus Institute", "Northbridge University", "Harbour College"),
        "campus",
        "thesis",
        ("Urban heat islands", "River water quality", "Green roofs and runoff"),
        "Spanish for beginners",
    ),
    "professional": Persona(
        "professional",
        "product manager",
        "company",
        ("Lumen Analytics", "Brightwave Systems", "Calder & Finch"),
        "office",
        "proposal",
        ("Customer portal relaunch", "Warehouse scanner rollout", "Loyalty app pilot"),
        "Pottery evening class",
    ),
    "freelancer": Persona(
        "freelancer",
        "freelance illustrator",
        "studio",
        ("Studio Kite", "Paper Crane Studio", "Inkwell Collective"),
        "studio",
        "commission",
        ("Children's book cover", "Festival poster series", "Cafe menu illustrations"),
        "Life drawing workshop",
    ),
}


@dataclass(frozen=True)
class Person:
    id: str
    first: str
    last: str
    relation: str  # self, sibling, parent, partner, friend, colleague, landlord
    email: str
    phone: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True)
class Pet:
    name: str
    species: str
    owner: str  # person id


@dataclass(frozen=True)
class Place:
    name: str
    kind: str  # gym, supermarket, cafe, restaurant, vet, dentist, work, home
    address: str
    lat: float
    lon: float


@dataclass
class World:
    """Everything the files are rendered from."""

    seed: int
    persona: Persona
    owner: Person
    city: City
    start: date
    end: date
    people: dict[str, Person]
    pets: list[Pet]
    places: dict[str, Place]
    org: str
    project: str
    trip_city: City
    home: Place
    extra: dict[str, object] = field(default_factory=dict)

    def person(self, key: str) -> Person:
        """A person by id (``friend1``) or by relation (``sibling``, the first one)."""
        if key in self.people:
            return self.people[key]
        found = next((p for p in self.people.values() if p.relation == key), None)
        if found is None:
            raise KeyError(f"no person {key!r} in this world")
        return found

    def people_of(self, relation: str) -> list[Person]:
        return [p for p in self.people.values() if p.relation == relation]

    @property
    def currency(self) -> str:
        return self.city.currency

    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days + 1)]

    def at(self, day: date, hour: int, minute: int = 0) -> datetime:
        return datetime(day.year, day.month, day.day, hour, minute)


def rng_for(seed: int, *parts: object) -> random.Random:
    """An independent random stream per (seed, part...), so adding a story never shifts another."""
    digest = hashlib.sha256(repr((seed, *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _email(first: str, last: str, domain: str) -> str:
    return f"{first.lower()}.{last.lower()}@{domain}"


_PHONE_PREFIX = {"Netherlands": "+31 6", "France": "+33 6", "United Kingdom": "+44 7700", "Portugal": "+351 91",
                 "United States": "+1 512", "Australia": "+61 4", "Sweden": "+46 70"}  # fmt: skip


def _phone(rng: random.Random, country: str = "Netherlands") -> str:
    return f"{_PHONE_PREFIX.get(country, '+31 6')} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}"


def _near(rng: random.Random, city: City, spread: float = 0.03) -> tuple[float, float]:
    return (round(city.lat + rng.uniform(-spread, spread), 5), round(city.lon + rng.uniform(-spread, spread), 5))


def build_world(seed: int, persona: str = "professional", months: int = 3) -> World:
    """A deterministic world for ``seed``: a person, ``months`` of timeline, people, pets and places."""
    if persona not in PERSONAS:
        raise ValueError(f"unknown persona {persona!r}; choose one of {', '.join(PERSONAS)}")
    if months < 1:
        raise ValueError(f"months must be at least 1, got {months}")
    rng = rng_for(seed, "world")
    kind = PERSONAS[persona]
    city = rng.choice(CITIES)
    first, *others_first = rng.sample(FIRST, 12)
    last, *others_last = rng.sample(LAST, 10)
    domain = "example.org"
    people: dict[str, Person] = {}

    def add(pid: str, f: str, la: str, relation: str, dom: str = domain) -> None:
        people[pid] = Person(pid, f, la, relation, _email(f, la, dom), _phone(rng, city.country))

    add("me", first, last, "self")
    add("sibling", others_first[0], last, "sibling")
    add("parent", others_first[1], last, "parent")
    for i in range(4):
        add(f"friend{i + 1}", others_first[2 + i], others_last[i], "friend")
    org = rng.choice(kind.orgs)
    org_domain = org.lower().replace(" & ", "").replace(" ", "") + ".example"
    for i in range(3):
        add(f"colleague{i + 1}", others_first[6 + i], others_last[4 + i], "colleague", org_domain)
    add("landlord", others_first[9], others_last[7], "landlord")
    start_month = rng.randint(1, 9)
    start = date(2024 + rng.randint(0, 1), start_month, 1)
    end_year, end_month = start.year + (start.month - 1 + months) // 12, (start.month - 1 + months) % 12 + 1
    end = date(end_year, end_month, 1) - timedelta(days=1)

    def place(kind_: str, name: str) -> Place:
        lat, lon = _near(rng, city)
        street = rng.choice(city.streets)
        return Place(name, kind_, f"{street} {rng.randint(2, 240)}, {city.name}", lat, lon)

    places = {
        "gym": place("gym", f"{rng.choice(GYMS)} {rng.choice(city.streets).split()[-1]}"),
        "supermarket": place("supermarket", rng.choice(SUPERMARKETS)),
        "cafe": place("cafe", rng.choice(CAFES)),
        "restaurant": place("restaurant", rng.choice(RESTAURANTS)),
        "restaurant2": place("restaurant", rng.choice([r for r in RESTAURANTS])),
        "vet": place("vet", rng.choice(VETS)),
        "dentist": place("dentist", rng.choice(DENTISTS)),
        "work": place("work", org),
    }
    if places["restaurant2"].name == places["restaurant"].name:
        others = [r for r in RESTAURANTS if r != places["restaurant"].name]
        places["restaurant2"] = place("restaurant", rng.choice(others))
    home = place("home", "home")
    pets = [
        Pet(rng.choice(PET_NAMES), rng.choice(["dog", "cat"]), "me"),
    ]
    sibling_pet = rng.choice([n for n in PET_NAMES if n != pets[0].name])
    pets.append(Pet(sibling_pet, "cat" if pets[0].species == "dog" else "dog", "sibling"))
    return World(
        seed=seed,
        persona=kind,
        owner=people["me"],
        city=city,
        start=start,
        end=end,
        people=people,
        pets=pets,
        places=places,
        org=org,
        project=rng.choice(kind.projects),
        trip_city=rng.choice(TRIP_CITIES),
        home=home,
    )
