"""ACP targets name an agent kind from the registry instead of carrying a command line.

A target whose command ran our mock agent becomes kind "mock"; any other command line is dropped
and its target left without a kind (it refuses prompts until an operator picks one), because a
stored command line is exactly what may no longer run.
"""

from django.db import migrations, models

MOCK_AGENT_MODULE = "recovery.mock.acp_agent"


def commands_to_kinds(apps, schema_editor):
    ProviderTarget = apps.get_model("sessions_app", "ProviderTarget")
    ProviderTarget.objects.filter(kind="acp", command__contains=MOCK_AGENT_MODULE).update(
        agent_kind="mock"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0003_generation_heartbeat"),
    ]

    operations = [
        migrations.AddField(
            model_name="providertarget",
            name="agent_kind",
            field=models.CharField(
                blank=True,
                choices=[
                    ("mock", "Mock ACP agent (tests and demos)"),
                    ("claude", "Claude Code (claude-agent-acp)"),
                    ("codex", "Codex (codex-acp)"),
                    ("gemini", "Gemini CLI (gemini --acp)"),
                ],
                max_length=20,
            ),
        ),
        migrations.RunPython(commands_to_kinds, migrations.RunPython.noop),
        migrations.RemoveField(model_name="providertarget", name="command"),
    ]
