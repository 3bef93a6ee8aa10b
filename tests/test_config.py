

def test_settings_or_defaults_falls_back_only_when_the_table_is_not_the_plugins() -> None:
    from pydantic import BaseModel

    from goclaw.config import settings_or_defaults
    from goclaw.errors import FeatureUnavailableError

    class Table(BaseModel):
        size: int = 3

    class Engine:
        def __init__(self, value: object) -> None:
            self.value = value

        def plugin_settings(self, feature: str) -> object:
            if self.value is None:
                raise FeatureUnavailableError(f"no settings for plugin feature {feature!r}")
            return self.value

    mine = Table(size=9)
    assert settings_or_defaults(Engine(mine), "x", Table) is mine
    assert settings_or_defaults(Engine(None), "x", Table) == Table()  # plugin disabled
    assert settings_or_defaults(Engine({"size": 9}), "x", Table) == Table()  # replaced by another model
