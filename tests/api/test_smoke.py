def test_version_answers(api):
    r = api().get("/version")
    assert r.status_code == 200
    assert set(r.json()) >= {"version", "revision"}


def test_root_is_user_one(api):
    r = api("root").get("/user")
    assert (r.status_code, r.json()["id"], r.json()["username"], r.json()["is_admin"]) == (
        200,
        1,
        "root",
        True,
    )


def test_made_user_authenticates(api, make):
    u = make.user()
    r = api(u).get("/user")
    assert r.status_code == 200
    assert r.json()["username"] == u.username
