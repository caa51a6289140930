"""Tasks can be archived (and brought back): the board hides them, nothing is deleted."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_apitoken_expiry_revocation"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="archived_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(fields=["owner", "archived_at"], name="sessions_ap_owner_i_72e742_idx"),
        ),
    ]
