"""Emoji reactions (GitLab's award emoji) on issues, epics and their notes.

Reading takes reading what is reacted to; reacting takes being signed in and able to comment
on it (GitLab's award_emoji ability); a reaction is removed only by whoever gave it or an
administrator. GitLab answers every refused reaction with its 404 "Award Emoji …" (an unknown
name, one already given, a system note) and a removal by someone else with 401; kiln does the
same. A thumbsup or thumbsdown on an issue or epic moves its upvotes or downvotes in the
reaction's transaction."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import case, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import events, policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound, Unauthorized
from kiln.models import AwardEmoji
from kiln.models.notes import NOTE
from kiln.pagination import Page, PageResult
from kiln.queries import award_emoji as finder
from kiln.queries import users as user_finder
from kiln.queries.award_emoji import AwardRow
from kiln.queries.users import UserRow
from kiln.schemas.award_emoji import AwardableParams, AwardCreate, AwardList
from kiln.services import notes, subjects, todos
from kiln.services.subjects import Kind, Noteable

THUMBSUP, THUMBSDOWN = "thumbsup", "thumbsdown"
# Other names for the same emoji, stored under the name GitLab stores.
ALIASES = {"+1": THUMBSUP, "-1": THUMBSDOWN, "thumbs_up": THUMBSUP, "thumbs_down": THUMBSDOWN}
# The emoji names reactions take (gemoji's alpha codes, as GitLab's list names them).
NAMES = frozenset(
    """
    thumbsup thumbsdown smile smiley grinning grin laughing joy rofl slight_smile upside_down
    wink blush innocent heart_eyes kissing_heart yum stuck_out_tongue stuck_out_tongue_winking_eye
    zany_face money_mouth hugging thinking shushing_face zipper_mouth raised_eyebrow neutral_face
    expressionless no_mouth smirk unamused rolling_eyes grimacing lying_face relieved pensive
    sleepy drooling_face sleeping mask thermometer_face head_bandage nauseated_face sneezing_face
    hot_face cold_face woozy_face dizzy_face exploding_head cowboy partying_face sunglasses nerd
    monocle_face confused worried slight_frown frowning2 open_mouth hushed astonished flushed
    pleading_face frowning anguished fearful cold_sweat disappointed_relieved cry sob scream
    confounded persevere disappointed sweat weary tired_face yawning_face triumph rage angry
    cursing_face smiling_imp imp skull skull_crossbones poop clown ogre goblin ghost alien
    space_invader robot smiley_cat smile_cat joy_cat heart_eyes_cat smirk_cat kissing_cat
    scream_cat crying_cat_face pouting_cat see_no_evil hear_no_evil speak_no_evil
    heart orange_heart yellow_heart green_heart blue_heart purple_heart black_heart white_heart
    brown_heart broken_heart heart_exclamation two_hearts revolving_hearts heartbeat heartpulse
    sparkling_heart cupid gift_heart heart_decoration kiss 100 anger boom dizzy sweat_drops dash
    hole bomb speech_balloon thought_balloon zzz wave raised_back_of_hand hand_splayed raised_hand
    vulcan ok_hand pinching_hand v fingers_crossed love_you_gesture metal call_me point_left
    point_right point_up_2 middle_finger point_down point_up fist punch left_facing_fist
    right_facing_fist clap raised_hands open_hands palms_up_together handshake pray writing_hand
    nail_care selfie muscle mechanical_arm leg foot ear nose brain tooth bone eyes eye tongue lips
    baby child boy girl man woman older_man older_woman person_frowning person_pouting no_good
    ok_woman information_desk_person raising_hand bow facepalm shrug cop detective guard
    construction_worker prince princess man_with_turban santa mrs_claus superhero supervillain
    mage fairy vampire merperson elf genie zombie runner dancer man_dancing levitate
    tada confetti_ball balloon gift ribbon trophy medal first_place second_place third_place
    soccer basketball football baseball tennis volleyball rugby_football 8ball dart bowling
    video_game game_die jigsaw chess_pawn art rocket airplane helicopter ship sailboat
    rotating_light construction checkered_flag triangular_flag_on_post flag_white flag_black
    fire droplet ocean sparkles star star2 stars sunny cloud partly_sunny cloud_rain
    thunder_cloud_rain snowflake snowman zap rainbow umbrella comet sun_with_face full_moon
    new_moon crescent_moon earth_americas earth_africa earth_asia globe_with_meridians
    apple green_apple pear tangerine lemon banana watermelon grapes strawberry melon cherries
    peach mango pineapple coconut kiwi tomato eggplant avocado broccoli carrot corn hot_pepper
    cucumber potato bread croissant cheese egg cooking bacon hamburger fries pizza hotdog
    sandwich taco burrito popcorn ramen spaghetti sushi bento curry rice cake birthday cookie
    doughnut chocolate_bar candy lollipop custard honey_pot coffee tea beer beers champagne
    wine_glass tumbler_glass cocktail tropical_drink milk baby_bottle
    dog cat mouse hamster rabbit fox bear panda_face koala tiger lion_face cow pig frog
    monkey_face chicken penguin bird baby_chick hatching_chick duck eagle owl bat wolf boar
    horse unicorn bee bug butterfly snail shell beetle ant spider scorpion turtle snake lizard
    t_rex sauropod octopus squid shrimp crab fish tropical_fish blowfish dolphin whale shark
    crocodile elephant giraffe kangaroo sloth otter llama hedgehog
    bouquet cherry_blossom rose hibiscus sunflower blossom tulip seedling evergreen_tree
    deciduous_tree palm_tree cactus herb shamrock four_leaf_clover maple_leaf fallen_leaf leaves
    mushroom
    watch iphone computer keyboard desktop printer mouse_three_button trackball joystick
    floppy_disk cd dvd camera video_camera movie_camera tv radio hourglass alarm_clock stopwatch
    battery electric_plug bulb flashlight candle money_with_wings dollar moneybag credit_card gem
    scales wrench hammer tools pick nut_and_bolt gear chains gun shield toolbox magnet test_tube
    dna microscope telescope satellite syringe pill door bed couch toilet shower bathtub key lock
    unlock closed_lock_with_key lock_with_ink_pen bell no_bell mega loudspeaker mailbox envelope
    email package label bookmark books book notebook ledger page_facing_up scroll calendar
    date card_index chart_with_upwards_trend chart_with_downwards_trend bar_chart clipboard
    pushpin round_pushpin paperclip straight_ruler triangular_ruler scissors card_box file_cabinet
    wastebasket pencil pencil2 pen fountain_pen paintbrush crayon memo mag mag_right link
    white_check_mark heavy_check_mark ballot_box_with_check x negative_squared_cross_mark
    heavy_plus_sign heavy_minus_sign heavy_division_sign heavy_multiplication_x infinity bangbang
    interrobang question grey_question grey_exclamation exclamation warning no_entry
    no_entry_sign stop_sign recycle beginner o sos up cool new free ok ng top soon back end on
    arrow_up arrow_down arrow_left arrow_right arrows_counterclockwise repeat twisted_rightwards_arrows
    red_circle orange_circle yellow_circle green_circle blue_circle purple_circle black_circle
    white_circle large_blue_diamond large_orange_diamond small_blue_diamond small_orange_diamond
    checkered_flag copyright registered tm hash zero one two three four five six seven eight
    nine keycap_ten
    """.split()  # noqa: SIM905 - a word list reads better than 500 quoted names
)


@dataclass(frozen=True, slots=True)
class Awardable:
    """What a reaction is on: the noteable itself, or one of its notes."""

    noteable: Noteable
    type: str
    id: int
    system_note: bool = False

    @property
    def counted(self) -> bool:
        """Thumbs on the issue or epic itself are its upvotes and downvotes."""
        return self.type == self.noteable.kind.noteable_type


@dataclass(slots=True)
class Awards:
    page: PageResult  # items: AwardRow
    users: dict[int, UserRow]


@dataclass(slots=True)
class OneAward:
    row: AwardRow
    users: dict[int, UserRow]


def normalized(name: str) -> str:
    return ALIASES.get(name, name)


def _awardable(db: Session, actor: Actor | None, kind: Kind, p: AwardableParams) -> Awardable:
    """The issue or epic (by iid) or its note the caller may read, else its 404."""
    n = subjects.noteable(db, actor, kind, p.id, p.ref)
    note_id = p.note_ref
    if note_id is None:
        return Awardable(n, kind.noteable_type, n.id)
    row = notes.readable_note(db, actor, n, note_id)
    return Awardable(n, NOTE, row.id, system_note=bool(row.system))


def _users(db: Session, rows: list[AwardRow]) -> dict[int, UserRow]:
    ids = list(dict.fromkeys(r.user_id for r in rows))
    return {u.id: u for u in user_finder.rows_by_ids(db, ids)}


def _one(db: Session, a: Awardable, award_id: int) -> OneAward:
    row = finder.award_of(db, a.type, a.id, award_id)
    if row is None:
        raise NotFound("Award Emoji")
    return OneAward(row, _users(db, [row]))


# ----------------------------------------------------------------------------- reading


def list_awards(db: Session, actor: Actor | None, kind: Kind, q: AwardList, page: Page) -> Awards:
    a = _awardable(db, actor, kind, q)
    result = finder.page_of_awardable(db, a.type, a.id, page)
    return Awards(result, _users(db, result.items))


def get_award(db: Session, actor: Actor | None, kind: Kind, p: AwardableParams, award_id: int) -> OneAward:
    return _one(db, _awardable(db, actor, kind, p), award_id)


# ----------------------------------------------------------------------------- writing


def _refused(reason: str) -> NotFound:
    """GitLab's answer to a reaction its AddService refuses."""
    return NotFound(f"Award Emoji {reason}")


def _count(db: Session, a: Awardable, name: str, delta: int) -> None:
    if not a.counted or name not in (THUMBSUP, THUMBSDOWN):
        return
    model = type(a.noteable.model)
    column = model.upvotes if name == THUMBSUP else model.downvotes
    value = column + delta if delta > 0 else case((column > 0, column + delta), else_=0)
    db.execute(
        update(model).where(model.id == a.noteable.id).values({column.key: value}),
        execution_options={"synchronize_session": False},
    )


def _event(db: Session, actor: Actor, a: Awardable, award_id: int, name: str, hook_action: str) -> None:
    n = a.noteable
    data: dict[str, object] = {
        "hook": "emoji",
        "hook_action": hook_action,
        "name": name,
        "awardable_type": a.type,
        "awardable_id": a.id,
        "noteable_type": n.kind.noteable_type,
        "iid": n.iid,
    }
    if n.group_id is not None:
        data["group_id"] = n.group_id
    action = "awarded" if hook_action == "award" else "revoked"
    events.record(
        db,
        action,
        project_id=n.project_id,
        actor=actor,
        target_type="AwardEmoji",
        target_id=award_id,
        data=data,
    )


def _taken(db: Session, a: Awardable, user_id: int, name: str) -> bool:
    found = db.execute(
        select(AwardEmoji.id).where(
            AwardEmoji.awardable_type == a.type,
            AwardEmoji.awardable_id == a.id,
            AwardEmoji.user_id == user_id,
            AwardEmoji.name == name,
        )
    ).first()
    return found is not None


def create_award(db: Session, actor: Actor, kind: Kind, p: AwardCreate) -> OneAward:
    a = _awardable(db, actor, kind, p)
    if not policy.may_award(actor, a.noteable.subject, reads=a.noteable.kind.reads):
        raise NotFound("Award Emoji")
    if a.system_note:
        raise _refused("Awardable cannot be awarded emoji")
    name = normalized(p.name)
    if name not in NAMES:
        raise _refused("Name is not a valid emoji name")
    try:
        with transaction(db):
            if _taken(db, a, actor.id, name):
                raise _refused("Name has already been taken")
            award = AwardEmoji(name=name, user_id=actor.id, awardable_type=a.type, awardable_id=a.id)
            db.add(award)
            db.flush()
            award_id = award.id
            _count(db, a, name, 1)
            # Reacting is acting on it: the awarder's pending to-dos on the issue or epic are done.
            todos.done_for_target(db, a.noteable.kind.noteable_type, a.noteable.id, user_id=actor.id)
            _event(db, actor, a, award_id, name, "award")
    except IntegrityError:
        # The same reaction given at the same moment by another request.
        raise _refused("Name has already been taken") from None
    return _one(db, a, award_id)


def delete_award(db: Session, actor: Actor, kind: Kind, p: AwardableParams, award_id: int) -> None:
    a = _awardable(db, actor, kind, p)
    with transaction(db):
        award = db.scalars(
            select(AwardEmoji).where(
                AwardEmoji.id == award_id,
                AwardEmoji.awardable_type == a.type,
                AwardEmoji.awardable_id == a.id,
            )
        ).first()
        if award is None:
            raise NotFound("Award Emoji")
        if not policy.may_revoke_award(actor, award.user_id):
            raise Unauthorized()
        name = award.name
        db.delete(award)
        db.flush()
        _count(db, a, name, -1)
        _event(db, actor, a, award_id, name, "revoke")
