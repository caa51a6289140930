"""Messages form a tree (Message.parent) and a session remembers the branch it shows
(Session.tail). Existing transcripts were linear: each row follows the one before it."""

from django.db import migrations, models
import django.db.models.deletion


def chain_existing_rows(apps, schema_editor):
    Message = apps.get_model("sessions_app", "Message")
    Session = apps.get_model("sessions_app", "Session")
    for session_id in Session.objects.values_list("pk", flat=True):
        previous = None
        for message_id in (
            Message.objects.filter(session_id=session_id).order_by("id").values_list("pk", flat=True)
        ):
            if previous is not None:
                Message.objects.filter(pk=message_id).update(parent_id=previous)
            previous = message_id
        Session.objects.filter(pk=session_id).update(tail_id=previous)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0011_target_permission_policy")]

    operations = [
        migrations.AddField(
            model_name="message",
            name="parent",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="children",
                to="sessions_app.message",
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="tail",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="sessions_app.message",
            ),
        ),
        migrations.RunPython(chain_existing_rows, migrations.RunPython.noop),
    ]
