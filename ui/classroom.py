"""A class: the teacher's page drives, and every student's page follows what it shows.

"Open a class" gives two links: the students' (`?class=ID`) and the driving one (`?class=ID&key=SECRET`). The driving
page publishes each change of its replay (run or preset, and step) and each race it shows to the class's board
(lab.serve.classes); a student's page keeps one look at the board waiting (outside the queue, holding no thread) until
the board changes, and applies only what changed. A student who steps, scrubs, plays, picks a preset, walks the lesson,
opens a file or runs or races their own steps away from the teacher until they follow again; nothing a student does
reaches anyone else. A link whose key does not drive the class opens a student's page, saying so and nothing more.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

import gradio as gr

from lab.serve import server
from lab.serve.classes import Board, Shown
from lab.serve.server import CLASS_SECONDS, CLASSES, RACES, SESSION_SECONDS, SHELF
from lookahead_core.records import RaceRecord
from visuals import replay
from visuals.markup import escape
from visuals.race import cost_figure, playback_html, race_figure, race_html

from .player import moved
from .presets import PRESET_IDS, preset_values, run_values

# A following page's look at the board waits up to WAIT_SECONDS for a change, checking every CHECK_SECONDS (a lookup
# in memory); its timer starts the next look at most POLL_SECONDS after one ends (a tick while one waits is dropped)
WAIT_SECONDS, CHECK_SECONDS, POLL_SECONDS = 10.0, 0.05, 0.2
INTRO = (
    "Show your replay on every student's screen: open a class, share the students' link, and keep the driving "
    "link to yourself. Each run, race, preset and step this page shows then appears on your students' pages; "
    "nothing they do reaches you or each other. "
    f"A class ends by itself {CLASS_SECONDS // 3600} hours after you last changed what it shows."
)
DRIVING = "You drive this class: each run, race, preset and step shown here appears on your students' pages."
FOLLOWING = "Following the teacher: this page shows what the teacher's page shows."
AWAY = "You stepped away from the teacher: the replay is yours until you follow again."
NOT_DRIVING = "This link does not drive the class: you follow the teacher, as every student does."
NO_CLASS = (
    f"No class is open under this link: a class ends {CLASS_SECONDS // 3600} hours after its teacher last changed "
    "what it shows, and when the server restarts."
)
TEACHERS_RUN = "The teacher's run, recorded here: it replays exactly as it was recorded."
RUN_GONE = "The teacher's run is no longer kept here: ask the teacher to run it again."


class Leash:
    """Whether a student's page follows the board now. Every copy of its seat holds the same leash, so that a look
    at the board already waiting when the student steps away sees it, and applies nothing."""

    def __init__(self) -> None:
        self.on = True


@dataclass(frozen=True)
class Seat:
    """This page's place in a class: the class, the secret where this page drives it, its leash (whether it follows
    the board), the board it last applied, and (driving) when the last race it published was run."""

    class_id: str
    key: str = ""
    leash: Leash = field(default_factory=Leash)
    board: Board | None = None
    race_at: str = ""


@dataclass(frozen=True)
class ClassBox:
    """The class's bar (what this page is in the class, Stop following, Follow again), the box that opens a class
    and shows its two links, the hidden button a driving page presses to publish, and the followers' poll with the
    board it brought back."""

    seat: gr.State
    news: gr.State
    status: gr.HTML
    stop: gr.Button
    follow: gr.Button
    open: gr.Button
    share: gr.Textbox
    drive: gr.Textbox
    publish: gr.Button
    poll: gr.Timer

    def bar(self) -> list:
        return [self.seat, self.status, self.stop, self.follow, self.poll]


def link_box(label: str, elem_id: str) -> gr.Textbox:
    """A class's link, hidden until the class opens, read-only with a copy button."""
    return gr.Textbox(label=label, interactive=False, visible=False, buttons=["copy"], elem_id=elem_id)


def build_classroom() -> ClassBox:
    """The class's bar (empty outside a class) and, closed, the box that opens one."""
    seat = gr.State(None, time_to_live=SESSION_SECONDS)
    news = gr.State(None)
    with gr.Row(equal_height=False, elem_id="ll-class-bar"):
        status = gr.HTML("", visible=False, elem_id="ll-class-status")
        stop = gr.Button("Stop following", size="sm", scale=0, min_width=150, visible=False, elem_id="ll-class-stop")
        follow = gr.Button("Follow again", size="sm", scale=0, min_width=150, visible=False, elem_id="ll-class-follow")
    with gr.Accordion("Teach a class: your replay on every student's screen", open=False, elem_id="ll-class"):
        gr.Markdown(INTRO)
        open_button = gr.Button("Open a class", size="sm", elem_id="ll-class-open")
        share = link_box("Students' link: share it", "ll-class-share")
        drive = link_box("Your driving link: keep it to yourself (whoever opens it drives the class)", "ll-class-drive")
    publish = gr.Button("Publish", visible="hidden", elem_id="ll-class-publish")
    poll = gr.Timer(POLL_SECONDS, active=False)
    return ClassBox(seat, news, status, stop, follow, open_button, share, drive, publish, poll)


def said(text: str, drives: bool = False) -> gr.HTML:
    """The class's bar saying `text` (hidden on a page in no class, so that it takes no room there)."""
    return gr.HTML(status_html(text, drives), visible=True)


def status_html(text: str, drives: bool = False) -> str:
    """The class's bar: what this page is in the class, announced to a screen reader when it changes (a driving
    page's is marked so that its browser publishes, scripts.PUBLISH)."""
    marked = " data-drives" if drives else ""
    return f'<p class="ll-class-status" role="status"{marked}>{escape(text)}</p>'


# ----------------------------------------------------------------------------------------------
# Updates: a board applied to a following page


def shown_of(preset, run_id, step) -> Shown | None:
    """What a page shows, from its preset, the shelf id of its run and its step (None: neither a preset's example
    nor a kept run, such as a prompt of one's own not yet run)."""
    index = step if isinstance(step, int) else 0
    if isinstance(run_id, str) and run_id:
        return Shown(run=run_id, step=index)
    return Shown(preset=preset, step=index) if preset in PRESET_IDS else None


def applied_shown(page, shown: Shown, before: Shown | None, run) -> dict:
    """The replay moved to `shown`: only the step where the page already shows its run, else the run or the
    preset loaded whole (a run the shelf no longer keeps leaves the replay, saying so)."""
    if shown.same_run(before) and replay.is_run(run):
        return moved(page, run, replay.clamp_step(run, shown.step))
    if not shown.run:
        return {page.controls.preset: shown.preset} | preset_values(page, shown.preset, str(shown.step))
    kept = SHELF.get(shown.run)
    if kept is None:
        return {page.classroom.status: said(f"{FOLLOWING} {RUN_GONE}")}
    return {page.controls.preset: None} | run_values(page, kept, shown.run, TEACHERS_RUN, str(shown.step))


def applied_race(page, race_id: str) -> dict:
    """The teacher's race on the race card, played back from the start."""
    result = RACES.get(race_id)
    if not isinstance(result, RaceRecord):
        return {page.race.summary: gr.skip()}
    card = page.race
    return {
        card.summary: race_html(result, gpu=server.ZERO_GPU),
        card.result: result,
        card.playback: gr.HTML(playback_html(result, take=time.monotonic_ns()), visible=True),
        card.chart: gr.Plot(race_figure(result), visible=True),
        card.costs: gr.Plot(cost_figure(result), visible=True),
    }


def applied(page, seat: Seat, board: Board, run) -> dict:
    """What changed on the board since `seat` last applied it, applied, and the seat's new board."""
    before = seat.board or Board()
    updates = {page.classroom.seat: replace(seat, board=board)}
    if board.shown is not None and board.shown != before.shown:
        updates |= applied_shown(page, board.shown, before.shown, run)
    if board.race and board.race != before.race:
        updates |= applied_race(page, board.race)
    return updates


def following(page, text: str = FOLLOWING) -> dict:
    """The bar of a page that follows: polling, with Stop following."""
    box = page.classroom
    return {
        box.status: said(text),
        box.stop: gr.Button(visible=True),
        box.follow: gr.Button(visible=False),
        box.poll: gr.Timer(active=True),
    }


def unchanged(page) -> dict:
    """An update that changes nothing (an empty dict would be read as one value)."""
    return {page.classroom.seat: gr.skip()}


def ended(page) -> dict:
    """No class under this page's link (any more): the bar says so, and nothing polls."""
    box = page.classroom
    shut = {box.stop: gr.Button(visible=False), box.follow: gr.Button(visible=False), box.poll: gr.Timer(active=False)}
    return {box.seat: None, box.status: said(NO_CLASS)} | shut


# ----------------------------------------------------------------------------------------------
# Handlers


def class_opened(page, run, request: gr.Request) -> dict:
    """A page opened from a class's link (after links.opened): it shows the class's board, then drives the class
    where its key is the class's secret, else follows it. Outside a class, nothing."""
    query = request.query_params if request is not None else {}
    if "class" not in query:
        return unchanged(page)
    class_id, board = query["class"], CLASSES.latest(query["class"])
    if board is None:
        return ended(page)
    if "key" in query and CLASSES.drives(class_id, query["key"]):
        seat = Seat(class_id, key=query["key"])
        return applied(page, seat, board, run) | {page.classroom.status: said(DRIVING, drives=True)}
    text = NOT_DRIVING if "key" in query else FOLLOWING
    return following(page, text) | applied(page, Seat(class_id), board, run)


def open_class(page, preset, run_id, step, race) -> dict:
    """A new class driven by this page, showing what it shows now: its two links as queries (the browser makes
    them whole, scripts.CLASS_LINKS)."""
    class_id, secret = CLASSES.open_class()
    box = page.classroom
    return {
        box.seat: publish(Seat(class_id, key=secret), preset, run_id, step, race),
        box.status: said(DRIVING, drives=True),
        box.stop: gr.Button(visible=False),
        box.follow: gr.Button(visible=False),
        box.poll: gr.Timer(active=False),
        box.share: gr.Textbox(f"?class={class_id}", visible=True),
        box.drive: gr.Textbox(f"?class={class_id}&key={secret}", visible=True),
    }


def publish(seat: Seat, preset, run_id, step, race) -> Seat | None:
    """What a driving page shows, put on its class's board (a race it has not published yet shelved first): the
    seat after it, or None where the class ended."""
    shown = shown_of(preset, run_id, step)
    driven = CLASSES.show(seat.class_id, seat.key, shown) if shown else CLASSES.drives(seat.class_id, seat.key)
    if not driven:
        return None
    if isinstance(race, RaceRecord) and race.ran_at != seat.race_at:
        CLASSES.race(seat.class_id, seat.key, RACES.put(race))
        return replace(seat, race_at=race.ran_at)
    return seat


def published(page, seat, preset, run_id, step, race) -> dict:
    """A driving page's change published (`publish`); a page that drives no class changes nothing, and one whose
    class ended says so."""
    if not isinstance(seat, Seat) or not seat.key:
        return unchanged(page)
    after = publish(seat, preset, run_id, step, race)
    if after is None:
        return ended(page)
    return {page.classroom.seat: after} if after != seat else unchanged(page)


async def wait_for_news(page, seat) -> dict:
    """A following page's look at its class's board: the board once it is newer than the one the page applied (or
    after WAIT_SECONDS; None once the class ended), into a State, which draws no progress over the panels while it
    waits (`apply_news` applies it)."""
    if not isinstance(seat, Seat) or seat.key or not seat.leash.on:
        return {page.classroom.news: gr.skip()}
    return {page.classroom.news: await newer_board(seat)}


def apply_news(page, seat, news, run) -> dict:
    """What changed on the board the page's look brought back, applied, unless the student stepped away meanwhile."""
    if not isinstance(seat, Seat) or seat.key or not seat.leash.on:
        return unchanged(page)
    if not isinstance(news, Board):
        return ended(page)
    if seat.board is not None and news.version == seat.board.version:
        return unchanged(page)
    return applied(page, seat, news, run)


async def newer_board(seat: Seat) -> Board | None:
    """The class's board once its version is not the one `seat` applied, or after WAIT_SECONDS, or once the student
    stepped away; None once the class ended."""
    seen = seat.board.version if seat.board is not None else -1
    deadline = time.monotonic() + WAIT_SECONDS
    board = CLASSES.latest(seat.class_id)
    while board is not None and board.version == seen and seat.leash.on and time.monotonic() < deadline:
        await asyncio.sleep(CHECK_SECONDS)
        board = CLASSES.latest(seat.class_id)
    return board


def stop_following(page, seat) -> dict:
    """The student steps away: the replay is theirs until they follow again."""
    if not isinstance(seat, Seat) or seat.key:
        return unchanged(page)
    seat.leash.on = False
    box = page.classroom
    return {
        box.status: said(AWAY),
        box.stop: gr.Button(visible=False),
        box.follow: gr.Button(visible=True),
        box.poll: gr.Timer(active=False),
    }


def follow_again(page, seat, run) -> dict:
    """The student follows again: the board applied whole at once, then polled."""
    if not isinstance(seat, Seat) or seat.key:
        return unchanged(page)
    board = CLASSES.latest(seat.class_id)
    if board is None:
        return ended(page)
    seat.leash.on = True
    back = replace(seat, board=None)
    return following(page) | applied(page, back, board, run)
