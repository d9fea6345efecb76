"""Readable, generated text-classification tasks from three domains (and one without a domain), for examples and
tests of domain evidence: clinical notes, financial news and social-media posts. Sentences are assembled from
templates and slot values with a seeded Generator, so a task is reproducible and reads like its domain (what a
person would give the ranker), without copying any real data set.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..retrieval.data.task import Split, Task

Gen = Callable[[np.random.Generator, str], str]


def _pick(rng: np.random.Generator, xs) -> str:
    return str(xs[int(rng.integers(len(xs)))])


# ------------------------------------------------------------------------------------------ clinical notes
_CLIN = {
    "cardiology": (["substernal chest pain radiating to the left arm", "palpitations and exertional dyspnea",
                    "syncope while climbing stairs", "bilateral leg edema and orthopnea"],
                   ["ECG shows ST elevation in leads II, III and aVF", "troponin elevated at {x:.1f} ng/mL",
                    "echocardiogram shows an ejection fraction of {p}%", "new-onset atrial fibrillation with RVR"],
                   ["started on aspirin and a heparin drip", "metoprolol titrated for rate control",
                    "cardiology consulted for catheterization", "furosemide 40 mg IV given"]),
    "pulmonology": (["productive cough and fever for {d} days", "worsening shortness of breath and wheezing",
                     "pleuritic chest pain and hemoptysis", "chronic cough with nocturnal desaturation"],
                    ["chest x-ray shows right lower lobe consolidation", "SpO2 {p}% on room air",
                     "CT angiogram shows a segmental pulmonary embolism", "spirometry with FEV1/FVC of 0.{p}"],
                    ["started on ceftriaxone and azithromycin", "nebulized albuterol and ipratropium given",
                     "placed on 2 L nasal cannula", "pulmonology to follow for bronchoscopy"]),
    "neurology": (["sudden right-sided weakness and slurred speech", "new-onset generalized tonic-clonic seizure",
                   "severe headache with photophobia and neck stiffness", "progressive numbness of both feet"],
                  ["NIHSS score of {d}", "MRI brain shows an acute left MCA infarct",
                   "EEG with focal epileptiform discharges", "lumbar puncture with elevated opening pressure"],
                  ["tPA administered within the window", "levetiracetam loaded at 20 mg/kg",
                   "neurology consulted, neuro checks every 2 hours", "started on gabapentin for neuropathic pain"]),
    "gastroenterology": (["epigastric pain and coffee-ground emesis", "painless jaundice and dark urine",
                          "bloody diarrhea for {d} days", "right upper quadrant pain after fatty meals"],
                         ["hemoglobin dropped to {x:.1f} g/dL", "lipase {p}0 U/L", "ultrasound shows gallstones with "
                          "wall thickening", "colonoscopy shows continuous colitis from the rectum"],
                         ["pantoprazole drip started, GI for urgent EGD", "made NPO with IV fluids",
                          "surgery consulted for cholecystectomy", "started on mesalamine"]),
}


def clinical_note(rng: np.random.Generator, label: str) -> str:
    complaint, finding, plan = _CLIN[label]
    age, sex = int(rng.integers(24, 91)), _pick(rng, ["male", "female"])
    hist = _pick(rng, ["hypertension", "type 2 diabetes", "hyperlipidemia", "COPD", "CKD stage 3", "no significant "
                                                                                                    "history"])
    fill = lambda s: s.format(x=float(rng.uniform(0.4, 9.5)), p=int(rng.integers(25, 96)),  # noqa: E731
                              d=int(rng.integers(2, 15)))
    return (f"{age}-year-old {sex} with a history of {hist} presents with {fill(_pick(rng, complaint))}. "
            f"{fill(_pick(rng, finding)).capitalize()}. {fill(_pick(rng, plan)).capitalize()}.")


# ------------------------------------------------------------------------------------------ financial news
_COMP = ["Northwind Holdings", "Acme Industrial", "Bluewater Energy", "Crestline Bank", "Orion Semiconductor",
         "Harbor Retail Group", "Summit Pharmaceuticals", "Pinecone Software"]
_FIN = {
    "positive": ["shares of {c} rose {x:.1f}% after quarterly revenue of ${r:.1f} billion beat analyst estimates",
                 "{c} raised its full-year earnings guidance and announced a ${r:.1f} billion share buyback",
                 "{c} reported record operating margins and increased its quarterly dividend by {p}%",
                 "analysts upgraded {c} to buy, citing strong free cash flow and expanding market share"],
    "negative": ["shares of {c} fell {x:.1f}% after the company missed earnings estimates and cut its outlook",
                 "{c} warned of a ${r:.1f} billion write-down as loan defaults rose sharply",
                 "{c} suspended its dividend after net income dropped {p}% year over year",
                 "rating agencies downgraded {c}'s debt, citing weak liquidity and rising leverage"],
    "neutral": ["{c} will report second-quarter results on Thursday before the market opens",
                "{c} named a new chief financial officer effective next month",
                "{c} shares were little changed at ${x:.2f} in light trading ahead of the Fed decision",
                "{c} completed its previously announced refinancing of ${r:.1f} billion in notes"],
}


def financial_news(rng: np.random.Generator, label: str) -> str:
    s = _pick(rng, _FIN[label]).format(c=_pick(rng, _COMP), x=float(rng.uniform(0.5, 14)),
                                       r=float(rng.uniform(0.2, 9.9)), p=int(rng.integers(3, 40)))
    tail = _pick(rng, [" according to a regulatory filing.", " the company said in a statement.",
                       " Trading volume was above the 30-day average.", ""])
    return (s[0].upper() + s[1:] + "," + tail) if tail else (s[0].upper() + s[1:] + ".")


# ------------------------------------------------------------------------------------------ social media
_BRANDS = ["@SkyjetAir", "@QuickCart", "@MetroMobile", "@BrewBuddies", "@StreamBoxTV", "@UrbanRide"]
_SOC = {
    "complaint": ["{b} my order is {d} days late and support keeps closing my ticket 😤 #fail",
                  "been on hold with {b} for {d}0 mins... this is a joke smh",
                  "{b} app crashed AGAIN right at checkout. lost my cart lol why am i still using this",
                  "ugh {b} charged me twice this month and nobody replies to DMs 🙄 #customerservice"],
    "praise": ["shoutout to {b} for fixing my issue in like {d} mins 🙌 best support ever",
               "ok {b} the new update is actually fire 🔥 love it",
               "{b} upgraded my seat for free today, made my whole week ❤️ #grateful",
               "can't believe how fast {b} delivered, ordered last night and it's here already 😍"],
    "question": ["hey {b} does the new plan include international roaming? asking before my trip 🤔",
                 "{b} is there any way to change my delivery address after ordering?",
                 "anyone know if {b} is doing a student discount this year? 👀",
                 "{b} what time does the weekend promo end? want to grab it tonight"],
}


def social_post(rng: np.random.Generator, label: str) -> str:
    return _pick(rng, _SOC[label]).format(b=_pick(rng, _BRANDS), d=int(rng.integers(2, 9)))


# ------------------------------------------------------------------------------------------ no domain
_PLAIN = {
    "morning": ["The meeting starts at nine and ends before lunch.", "She opened the window and made some tea.",
                "We usually take the early train on weekdays.", "The bakery opens at seven in the morning."],
    "evening": ["They watched a film together after dinner.", "He turned off the lights and went to bed early.",
                "The park was quiet once the sun went down.", "We cooked pasta and talked until late."],
}


def plain_sentence(rng: np.random.Generator, label: str) -> str:
    return _pick(rng, _PLAIN[label]) + " " + _pick(rng, ["It was an ordinary day.", "Nothing special happened.",
                                                           "Everyone seemed calm.", ""])


DOMAINS: dict[str, tuple[Gen, tuple[str, ...]]] = {
    "clinical": (clinical_note, tuple(_CLIN)),
    "finance": (financial_news, tuple(_FIN)),
    "social": (social_post, tuple(_SOC)),
    "plain": (plain_sentence, tuple(_PLAIN)),
}


def make_domain_task(domain: str, n_train: int = 240, n_val: int = 40, n_test: int = 40, seed: int = 0,
                     task_id: str | None = None) -> Task:
    """A balanced task of readable ``domain`` texts (``clinical``, ``finance``, ``social`` or ``plain``)."""
    gen, labels = DOMAINS[domain]
    rng = np.random.default_rng(seed)

    def split(n: int) -> Split:
        ys = [labels[i % len(labels)] for i in range(n)]
        ys = [ys[i] for i in rng.permutation(n)]
        return Split(tuple(gen(rng, y) for y in ys), tuple(ys))

    return Task(task_id or f"{domain}-{len(labels)}class", name=task_id or domain, train=split(n_train),
                val=split(n_val), test=split(n_test))
